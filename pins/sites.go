package pins

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/internal/clip"
)

// site is one place in a file that holds, or could hold, a digest for a
// repository: a pin, or under PinTags a tag reference to pin.
type site struct {
	kind    Kind
	image   string // normalised repository
	tag     string
	digest  string // "" for an unpinned tag reference
	line    int    // position of the digest, or of where one would go
	col     int
	ignored bool
	err     error // the site cannot be rewritten in place; line says where

	digOff int // offset of the digest, -1 if none

	tagOff, tagLen int  // the tag's bytes, tagOff -1 if none
	tagScalar      bool // the tag is a whole plain YAML scalar, not part of a reference

	// Where a digest goes under PinTags: pinLen bytes at pinOff are
	// replaced by pinPrefix+digest. pinOff is -1 if the site cannot be
	// pinned; pinLine is set when the prefix starts a new line.
	pinOff, pinLen int
	pinPrefix      string
	pinLine        bool

	// alts are other names the site's image may render as (a Helm
	// mapping under a global registry); the site is a pin of each.
	alts []string
	// digBare: the digest is written as its bare hex, without "sha256:"
	// (a Helm "sha" key the templates prefix themselves).
	digBare bool
	// unplaced says why a site of the image cannot be pinned in place; it
	// is reported as a skip, and nothing is written.
	unplaced string
	// bare: a manifest's image with neither tag nor digest (so "latest").
	// Only a scan for tag references lists it; nothing rewrites it.
	bare bool
}

// names reports whether the site is a pin of repo.
func (s *site) names(repo string) bool { return s.image == repo || slices.Contains(s.alts, repo) }

func newSite(kind Kind, image string) site {
	return site{kind: kind, image: image, digOff: -1, tagOff: -1, pinOff: -1}
}

// yamlSites lists the sites in a parsed YAML file of the given type.
func yamlSites(ft fileType, src []byte, lt *lineTable, roots []*yaml.Node, sites []site, repos repoCache) []site {
	w := &yamlWalker{src: src, lt: lt, sites: sites, repos: repos}
	for _, root := range roots {
		w.global = globalRegistry(root)
		switch ft {
		case ftPins:
			w.pinsFile(root)
		case ftKustomize:
			w.kustomization(root)
			w.walk(root, nil, 0)
		default:
			w.fluxKustomization(root)
			w.walk(root, nil, 0)
		}
	}
	return w.sites
}

type yamlWalker struct {
	src   []byte
	lt    *lineTable
	sites []site
	repos repoCache
	// global is the registries of the document's global section.
	global globals
}

// maxDepth bounds recursion over hostile input; yaml.v3 itself nests deeper.
const maxDepth = 10000

// walk finds image scalars and helm mappings anywhere below n. key is the
// mapping key whose value n is, if any.
func (w *yamlWalker) walk(n *yaml.Node, key *yaml.Node, depth int) {
	if depth > maxDepth {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.helm(n, key)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case v.Kind != yaml.ScalarNode:
			case k.Kind == yaml.ScalarNode && k.Value == "image":
				w.imageScalar(v)
			case k.Kind == yaml.ScalarNode && notRefKeys[k.Value]:
			case hasDigestRef(v.Value):
				w.digestScalar(v)
			}
			w.walk(v, k, depth+1)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			w.walk(c, nil, depth+1)
		}
	}
}

// notRefKeys are keys whose value is part of a pin, not a whole reference:
// a Helm or kustomize tag may carry the digest ("1.27@sha256:...").
var notRefKeys = map[string]bool{"tag": true, "newTag": true, "digest": true}

// digestScalar records a manifest site for a mapping value, under any key,
// whose whole value is an image reference with a digest, unless a more
// specific site (kustomize's newName) has it already. Sequence items are
// left alone: a list of strings is most often a command line.
func (w *yamlWalker) digestScalar(v *yaml.Node) {
	n := len(w.sites)
	w.refScalar(KindManifest, v, true)
	if len(w.sites) == n+1 {
		last := w.sites[n]
		for _, s := range w.sites[:n] {
			if s.digOff == last.digOff && s.digOff >= 0 {
				w.sites = w.sites[:n]
				return
			}
		}
	}
}

// imageScalar records a manifest site for a scalar holding a whole image
// reference.
func (w *yamlWalker) imageScalar(v *yaml.Node) { w.refScalar(KindManifest, v, false, 0) }

// refScalar records a site of the given kind for a scalar holding a whole
// image reference (with a digest, when needDigest). extra is another line
// where an ignore comment counts, or 0.
func (w *yamlWalker) refScalar(kind Kind, v *yaml.Node, needDigest bool, extra ...int) {
	if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return
	}
	r, ok := parseRef(v.Value, w.repos)
	bare := ok && r.digOff < 0 && r.tagOff < 0 && kind == KindManifest && !needDigest
	if !ok || r.digOff < 0 && (r.tagOff < 0 || needDigest) && !bare {
		return
	}
	s := newSite(kind, r.repo)
	s.bare = bare
	s.tag, s.digest = r.tag, r.digest
	off, ok := w.locate(v)
	if !ok {
		w.unlocatable(s, v)
		return
	}
	if r.digOff >= 0 {
		s.digOff = off + r.digOff
		s.line, s.col = w.lt.position(s.digOff)
	} else {
		s.pinOff, s.pinPrefix = off+r.end, "@"
		s.line, s.col = w.lt.position(s.pinOff)
	}
	if r.tagOff >= 0 {
		s.tagOff, s.tagLen = off+r.tagOff, len(r.tag)
	}
	s.ignored = w.ignoredAt(s.line)
	for _, l := range extra {
		s.ignored = s.ignored || w.ignoredAt(l)
	}
	w.sites = append(w.sites, s)
}

func (w *yamlWalker) unlocatable(s site, v *yaml.Node) {
	s.line, s.col = v.Line, v.Column
	s.err = errors.New("cannot rewrite in place: the value is escaped, folded or spans lines")
	w.sites = append(w.sites, s)
}

// mapFields holds the values, and their keys, of up to eight chosen keys of
// a mapping, without allocating.
type mapFields struct {
	names    []string
	key, val [8]*yaml.Node
}

func fields(m *yaml.Node, names ...string) mapFields {
	f := mapFields{names: names}
	if m.Kind != yaml.MappingNode {
		return f
	}
	var lens uint64 // as in keySet: most keys are ruled out by length
	for _, n := range names {
		lens |= 1 << min(len(n), 63)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode || lens&(1<<min(len(k.Value), 63)) == 0 {
			continue
		}
		for j, n := range names {
			if k.Value == n {
				f.key[j], f.val[j] = k, m.Content[i+1]
			}
		}
	}
	return f
}

// rootField returns the value of one key of a mapping, or nil.
func rootField(m *yaml.Node, name string) *yaml.Node {
	f := fields(m, name)
	return f.get(name)
}

// get returns the value of a chosen key, or nil.
func (f *mapFields) get(name string) *yaml.Node {
	for j, n := range f.names {
		if n == name {
			return f.val[j]
		}
	}
	return nil
}

// getKey returns a chosen key's node, or nil.
func (f *mapFields) getKey(name string) *yaml.Node {
	for j, n := range f.names {
		if n == name {
			return f.key[j]
		}
	}
	return nil
}

// scalars reports whether every chosen key present has a scalar value.
func (f *mapFields) scalars() bool {
	for _, v := range f.val {
		if v != nil && v.Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

// isNull reports a plain scalar YAML reads as null.
func isNull(v *yaml.Node) bool {
	if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return false
	}
	switch v.Value {
	case "", "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// mappingSite fills and records a site for a mapping holding a tag key and
// a digest key (helm, kustomize, pins file). extra lists more lines where
// an ignore comment counts.
func (w *yamlWalker) mappingSite(s site, m *yaml.Node, f *mapFields, tagName, digName string, extra []int) {
	tagKey, tagVal := f.getKey(tagName), f.get(tagName)
	digKey, digVal := f.getKey(digName), f.get(digName)
	lines := extra
	if tagVal != nil && !isNull(tagVal) {
		// A tag that carries the digest: "1.27@sha256:..." (kustomize's
		// newTag, Bitnami's Helm values).
		if at := strings.IndexByte(tagVal.Value, '@'); at > 0 && validTag(tagVal.Value[:at]) && validDigest(tagVal.Value[at+1:]) {
			off, ok := w.locate(tagVal)
			if !ok {
				w.unlocatable(s, tagVal)
				return
			}
			s.tag, s.tagOff, s.tagLen = tagVal.Value[:at], off, at
			s.digest, s.digOff, s.digBare = tagVal.Value[at+1:], off+at+1, false
			s.line, s.col = w.lt.position(s.digOff)
			s.ignored = w.ignoredAt(s.line) || w.ignoredAt(tagVal.Line)
			for _, l := range lines {
				s.ignored = s.ignored || w.ignoredAt(l)
			}
			w.sites = append(w.sites, s)
			return
		}
	}
	if tagVal != nil && !isNull(tagVal) {
		s.tag = tagVal.Value
		if validTag(s.tag) {
			off, ok := w.locate(tagVal)
			if !ok {
				w.unlocatable(s, tagVal)
				return
			}
			s.tagOff, s.tagLen, s.tagScalar = off, len(s.tag), tagVal.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0
		}
	}
	switch {
	case digVal != nil && !isNull(digVal) && digVal.Value != "":
		v := digVal.Value
		switch {
		case validDigest(v):
			s.digBare = false
		case s.digBare && validDigest("sha256:"+v):
			v = "sha256:" + v
		default:
			if s.kind == KindHelm {
				s.line, s.col = digVal.Line, digVal.Column
				s.unplaced = fmt.Sprintf("its %s key holds %s, not a digest", digName, clip.Quote(digVal.Value))
				w.sites = append(w.sites, s)
			}
			return
		}
		s.digest = v
		off, ok := w.locate(digVal)
		if !ok {
			w.unlocatable(s, digVal)
			return
		}
		s.digOff = off
		s.line, s.col = w.lt.position(off)
	case s.tagOff < 0:
		if s.kind == KindHelm && tagVal != nil {
			s.line, s.col = tagVal.Line, tagVal.Column
			s.unplaced = fmt.Sprintf("its tag %s is not a plain tag (the chart renders its own, such as the appVersion)", clip.Quote(tagVal.Value))
			w.sites = append(w.sites, s)
		}
		return // nothing pinned and no tag to pin
	case digVal != nil && digVal.Value == "" && digVal.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		off, ok := w.locate(digVal)
		if !ok {
			return
		}
		s.pinOff = off
	case digVal != nil && digVal.Value != "": // ~ or null
		off, ok := w.locate(digVal)
		if !ok {
			return
		}
		s.pinOff, s.pinLen = off, len(digVal.Value)
	case digVal != nil: // "digest:" with nothing after it
		off, ok := w.locate(digKey)
		if !ok || off+len(digKey.Value) >= len(w.src) || w.src[off+len(digKey.Value)] != ':' {
			return
		}
		s.pinOff, s.pinPrefix = off+len(digKey.Value)+1, " "
	default: // no digest key: add a line after the tag's, in a block mapping
		if tagVal == nil || m.Style&yaml.FlowStyle != 0 || tagVal.Line != tagKey.Line {
			if s.kind == KindHelm {
				s.line, s.col = tagKey.Line, tagKey.Column
				s.unplaced = fmt.Sprintf("no %s key, and none can be added here (a flow mapping, or a tag on its own line): add %s: \"\" beside the tag", digName, digName)
				w.sites = append(w.sites, s)
			}
			return
		}
		keyOff := w.lt.offset(tagKey.Line, tagKey.Column)
		start := w.lt.starts[tagKey.Line-1]
		if keyOff < 0 || strings.Trim(string(w.src[start:keyOff]), " -") != "" {
			return
		}
		br := w.lt.lineBreak(tagVal.Line)
		if br == "" {
			br = "\n"
			if bytes.Contains(w.src, []byte("\r\n")) {
				br = "\r\n"
			}
		}
		s.pinOff = w.lt.lineEnd(tagVal.Line)
		s.pinPrefix = br + strings.Repeat(" ", tagKey.Column-1) + digName + ": "
		s.pinLine = true
		lines = append(lines, tagVal.Line)
	}
	if s.pinOff >= 0 && !s.pinLine {
		s.line, s.col = w.lt.position(s.pinOff)
	} else if s.pinLine {
		s.line, s.col = tagVal.Line+1, tagKey.Column+len(digName)+2
	}
	s.ignored = w.ignoredAt(s.line) && !s.pinLine
	for _, l := range lines {
		s.ignored = s.ignored || w.ignoredAt(l)
	}
	w.sites = append(w.sites, s)
}

// locate returns the offset of the first byte of a scalar's text (inside
// its quotes), after checking that the text there is exactly its value:
// a scalar with escapes, folding or line breaks is refused.
func (w *yamlWalker) locate(v *yaml.Node) (int, bool) {
	src := w.src
	off := w.lt.offset(v.Line, v.Column)
	if off < 0 {
		return 0, false
	}
	// Skip an anchor or tag and the space after it; yaml.v3 puts the
	// node's position at its first property.
	for off < len(src) && (src[off] == '&' || src[off] == '!') {
		for off < len(src) && src[off] != ' ' && src[off] != '\t' && breakLen(src, off) == 0 {
			off++
		}
		for off < len(src) {
			if src[off] == ' ' || src[off] == '\t' {
				off++
			} else if n := breakLen(src, off); n > 0 {
				off += n
			} else if src[off] == '#' {
				for off < len(src) && breakLen(src, off) == 0 {
					off++
				}
			} else {
				break
			}
		}
	}
	var q byte
	switch {
	case v.Style&yaml.DoubleQuotedStyle != 0:
		q = '"'
	case v.Style&yaml.SingleQuotedStyle != 0:
		q = '\''
	case v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, false
	}
	if q != 0 {
		if off >= len(src) || src[off] != q {
			return 0, false
		}
		off++
	}
	end := off + len(v.Value)
	if end > len(src) || string(src[off:end]) != v.Value {
		return 0, false
	}
	if q != 0 && (end >= len(src) || src[end] != q) {
		return 0, false
	}
	return off, true
}

// ignoredAt reports whether a line carries a "# pinbot: ignore" comment.
func (w *yamlWalker) ignoredAt(line int) bool {
	if line < 1 || line > len(w.lt.starts) {
		return false
	}
	return hasIgnore(w.src[w.lt.starts[line-1]:w.lt.lineEnd(line)])
}

// hasIgnore reports whether a line holds a comment "# pinbot: ignore"
// (spaces around the words are optional).
func hasIgnore(l []byte) bool {
	for i := 0; i < len(l); i++ {
		if l[i] != '#' || i > 0 && l[i-1] != ' ' && l[i-1] != '\t' {
			continue
		}
		rest := bytes.TrimLeft(l[i+1:], " \t")
		rest, ok := bytes.CutPrefix(rest, []byte("pinbot:"))
		if !ok {
			continue
		}
		rest, ok = bytes.CutPrefix(bytes.TrimLeft(rest, " \t"), []byte("ignore"))
		if ok && (len(rest) == 0 || !isWordByte(rest[0])) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}
