package pins

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// addGoldenSeeds adds every original file of the golden cases to a fuzz
// corpus, on top of the committed testdata/fuzz corpus.
func addGoldenSeeds(f *testing.F, add func(name string, src []byte)) {
	files, err := filepath.Glob("testdata/*/original/*")
	if err != nil {
		f.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/*/original/*/*")
	for _, p := range append(files, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a directory
		}
		add(filepath.Base(p), b)
	}
}

// node is the part of a yaml.Node the fast parser must reproduce.
type node struct {
	Kind         yaml.Kind
	Style        yaml.Style
	Value        string
	Anchor       string
	Line, Column int
	Content      []node
}

func shape(n *yaml.Node) node {
	s := node{Kind: n.Kind, Style: n.Style, Value: n.Value, Anchor: n.Anchor, Line: n.Line, Column: n.Column}
	switch {
	case n.Kind != yaml.ScalarNode:
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		s.Value = "" // block scalar values are not computed
	case n.Style == 0 && n.Value == "":
		s.Line, s.Column = 0, 0 // an empty null has no text to point at
	}
	for _, c := range n.Content {
		s.Content = append(s.Content, shape(c))
	}
	return s
}

func shapes(roots []*yaml.Node) []node {
	var out []node
	for _, r := range roots {
		out = append(out, shape(r))
	}
	return out
}

// prune applies the fast parser's pruning rules to a yaml.v3 tree.
func prune(n *yaml.Node, keys keySet) *yaml.Node {
	if keys.all || n.Kind == yaml.ScalarNode {
		return n
	}
	c := *n
	c.Content = nil
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], prune(n.Content[i+1], keys)
			switch {
			case k.Kind == yaml.ScalarNode && keys.has(k.Value):
				c.Content = append(c.Content, k, v)
			case keptValue(v):
				blank := *k
				blank.Value = ""
				c.Content = append(c.Content, &blank, v)
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if item = prune(item, keys); keptValue(item) {
				c.Content = append(c.Content, item)
			}
		}
	}
	return &c
}

// keptValue reports a pruned value kept where its key does not keep it:
// a block collection, a flow collection with content, or a plain or
// quoted scalar holding "@sha256:".
func keptValue(v *yaml.Node) bool {
	if v.Kind == yaml.ScalarNode {
		return v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 && strings.Contains(v.Value, "@sha256:")
	}
	return (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && (v.Style&yaml.FlowStyle == 0 || len(v.Content) > 0)
}

func pruneAll(roots []*yaml.Node, keys keySet) []*yaml.Node {
	out := make([]*yaml.Node, len(roots))
	for i, r := range roots {
		out[i] = prune(r, keys)
	}
	return out
}

// checkFast compares the fast parser with yaml.v3 on src, with every key
// kept and with the manifest keys only.
func checkFast(t *testing.T, src []byte) bool {
	t.Helper()
	accepted := false
	for _, keys := range []keySet{allKeys, manifestKeys, kustomizeKeys, fluxKeys} {
		fast, starts, err := parseFast(src, keys, nil)
		if err != nil {
			continue
		}
		if diff := cmp.Diff(newLineTable(src).starts, starts); diff != "" {
			t.Fatalf("fast parser's line starts differ (-lineTable +fast):\n%s", diff)
		}
		accepted = true
		slow, err := parseSlow(src)
		if err != nil {
			t.Fatalf("fast parser accepted input yaml.v3 rejects (%v):\n%q", err, src)
		}
		if diff := cmp.Diff(shapes(pruneAll(slow, keys)), shapes(fast)); diff != "" {
			t.Fatalf("fast parser (keys %+v) disagrees with yaml.v3 on\n%s\n(-yaml.v3 +fast):\n%s", keys, src, diff)
		}
	}
	return accepted
}

// FuzzParse checks the fast parser against yaml.v3: whatever it accepts,
// yaml.v3 accepts too and reads as the same tree.
func FuzzParse(f *testing.F) {
	addGoldenSeeds(f, func(_ string, b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, src []byte) { checkFast(t, src) })
}

// fuzzNames are the file names FuzzRewrite rewrites its input as.
var fuzzNames = []string{"deploy.yaml", "kustomization.yaml", "pins.yaml", "Dockerfile"}

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// FuzzRewrite checks Rewrite's promise on any input: it either fails, or
// changes only the reported lines and, for YAML, leaves a tree equal to the
// input's except for the digests (and tags) it set.
func FuzzRewrite(f *testing.F) {
	addGoldenSeeds(f, func(name string, b []byte) {
		kind := uint8(0)
		for i, n := range fuzzNames {
			if classify(name) == classify(n) {
				kind = uint8(i)
			}
		}
		f.Add(b, kind, false, false)
		f.Add(b, kind, true, true)
	})
	f.Fuzz(func(t *testing.T, src []byte, kind uint8, pinTags, newTag bool) {
		file := fuzzNames[int(kind)%len(fuzzNames)]
		u := Update{Image: "nginx", Digest: "sha256:" + strings.Repeat("b", 64), PinTags: pinTags}
		if newTag {
			u.Tag = "v9"
		}
		// Rewrite the repository of the first site, so mutations of the
		// seeds keep exercising rewrites.
		if sites, _, broken := fileSites(file, classify(file), src, nil); len(broken) == 0 {
			for _, s := range sites {
				if s.err == nil {
					u.Image = s.image
					if pinTags && !newTag && validTag(s.tag) {
						u.Tag = s.tag // a tag reference is pinned only to its own tag
					}
					break
				}
			}
		}
		out, changes, err := Rewrite(file, src, u)
		if err != nil {
			return
		}
		if len(changes) == 0 {
			if !bytes.Equal(out, src) {
				t.Fatalf("no changes reported but output differs:\n%q\n%q", src, out)
			}
			return
		}
		checkLines(t, src, out, changes)
		if classify(file) == ftDockerfile {
			return
		}
		before, err := parseSlow(src)
		var brokenBefore []brokenPart
		if err != nil {
			// A partial file: its documents that parse were rewritten.
			before, brokenBefore = parseParts(src, 0, err)
			if len(before) == 0 {
				t.Fatalf("rewrote input no document of which parses (%v):\n%q", err, src)
			}
		}
		after, err := parseSlow(out)
		if err != nil {
			var brokenAfter []brokenPart
			after, brokenAfter = parseParts(out, 0, err)
			if len(brokenAfter) != len(brokenBefore) {
				t.Fatalf("output has %d broken documents, input %d (%v):\ninput  %q\noutput %q", len(brokenAfter), len(brokenBefore), err, src, out)
			}
		}
		if len(before) != len(after) {
			t.Fatalf("output has %d documents, input %d", len(after), len(before))
		}
		for i := range before {
			if msg := sameTree(before[i], after[i], u); msg != "" {
				t.Fatalf("%s\ninput  %q\noutput %q", msg, src, out)
			}
		}
	})
}

// checkLines checks that only the changed lines differ, and that they read
// as reported.
func checkLines(t *testing.T, src, out []byte, changes []Change) {
	t.Helper()
	old, neu := newLineTable(src), newLineTable(out)
	added := map[int]bool{}
	changed := map[int]bool{}
	for _, c := range changes {
		if got := neu.text(c.Line); got != c.After {
			t.Fatalf("line %d is %q, change says %q", c.Line, got, c.After)
		}
		if c.Before == "" {
			added[c.Line] = true
		} else {
			changed[c.Line] = true
		}
	}
	if len(neu.starts)-len(added) != len(old.starts) {
		t.Fatalf("output has %d lines with %d added, input %d", len(neu.starts), len(added), len(old.starts))
	}
	o := 1
	for n := 1; n <= len(neu.starts); n++ {
		if added[n] {
			continue
		}
		if !changed[n] && old.text(o) != neu.text(n) {
			t.Fatalf("unchanged line %d differs: %q -> %q", n, old.text(o), neu.text(n))
		}
		// The last line gains a break when a line is added after it.
		if old.lineBreak(o) != neu.lineBreak(n) && !(old.lineBreak(o) == "" && added[n+1]) {
			t.Fatalf("line %d's ending changed from %q to %q", n, old.lineBreak(o), neu.lineBreak(n))
		}
		o++
	}
}

// sameTree compares two YAML trees, allowing only what Rewrite may change:
// digests, the tag of a changed reference or tag scalar, and an added
// digest key.
func sameTree(a, b *yaml.Node, u Update) string {
	if a.Kind != b.Kind || a.Anchor != b.Anchor {
		return "node kind or anchor changed at line " + strconv.Itoa(a.Line)
	}
	if a.Kind == yaml.ScalarNode {
		if a.Value == b.Value && a.Tag == b.Tag && a.Style == b.Style {
			return ""
		}
		if sameScalar(a.Value, b.Value, u) {
			return ""
		}
		return "scalar " + strconv.Quote(a.Value) + " became " + strconv.Quote(b.Value)
	}
	ac, bc := a.Content, b.Content
	if a.Kind == yaml.MappingNode && len(bc) == len(ac)+2 {
		// An added "digest: <digest>" pair.
		for i := 0; i+1 < len(bc); i += 2 {
			if (bc[i].Value == "digest") && bc[i+1].Value == u.Digest && !hasKey(ac, "digest") && !hasKey(ac, "sha") && !hasKey(ac, "sha256") {
				bc = append(append([]*yaml.Node(nil), bc[:i]...), bc[i+2:]...)
				break
			}
		}
	}
	if len(ac) != len(bc) {
		return "collection size changed at line " + strconv.Itoa(a.Line)
	}
	for i := range ac {
		if msg := sameTree(ac[i], bc[i], u); msg != "" {
			return msg
		}
	}
	return ""
}

func hasKey(content []*yaml.Node, key string) bool {
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value == key {
			return true
		}
	}
	return false
}

// sameScalar allows a scalar to change only by a digest, its tag, or by
// gaining a digest.
func sameScalar(a, b string, u Update) bool {
	if b == u.Tag || b == u.Digest && (a == "" || isNullWord(a) || validDigest(a)) {
		return true
	}
	// A Helm "sha" key's bare hex.
	if bare := strings.TrimPrefix(u.Digest, "sha256:"); b == bare && (a == "" || isNullWord(a) || validDigest("sha256:"+a)) {
		return true
	}
	// A tag that carries the digest: "1.27@sha256:...".
	if at := strings.IndexByte(a, '@'); at > 0 && validDigest(a[at+1:]) && validTag(a[:at]) {
		if bt, bd, ok := strings.Cut(b, "@"); ok && bd == u.Digest && (bt == a[:at] || bt == u.Tag) {
			return true
		}
	}
	ra, oka := parseRef(a, nil)
	rb, okb := parseRef(b, nil)
	if !oka || !okb || ra.repo != rb.repo {
		return false
	}
	// kustomize's "name: repo:tag" with the digest beside it: the tag only.
	if ra.digest == "" && rb.digest == "" && rb.tag == u.Tag && strings.Replace(b, ":"+rb.tag, ":"+ra.tag, 1) == a {
		return true
	}
	if rb.digest != u.Digest || ra.tag != rb.tag && rb.tag != u.Tag {
		return false
	}
	return digestRE.ReplaceAllString(a, "") == digestRE.ReplaceAllString(strings.Replace(b, ":"+rb.tag, ":"+ra.tag, 1), "") ||
		a+"@"+u.Digest == strings.Replace(b, ":"+rb.tag, ":"+ra.tag, 1)
}

func isNullWord(s string) bool { return s == "~" || strings.EqualFold(s, "null") }
