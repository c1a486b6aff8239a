package pinbot_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
	"pinbot.dev/pinbot/promote"
)

// The docs tests keep README.md and docs/ true to the code: every flag
// they give a pinbot command exists on it, every config block they show
// passes the config's schema, every link lands, and no test's name or
// other internal word reaches a user's page. docs/cli is generated, and
// checked by its own test.

// userDocs are the Markdown files a user reads.
func userDocs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	// The config reference pages, generated from the config types' doc
	// comments, speak to users too.
	reference, err := filepath.Glob("docs/schema/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]string{"README.md"}, files...), reference...)
}

// foreignFlags are other tools' flags the docs show (Kaniko's, kubectl's,
// Helm's, Git's), checked nowhere; a bare `--flag` in the text that is
// not one of these must be pinbot's.
var foreignFlags = map[string]string{
	"destination": "kaniko", "label": "kaniko", "from-file": "kubectl", "type": "kubectl",
	"set": "helm", "set-string": "helm", "create-namespace": "helm", "depth": "git", "force": "git",
	"hard": "git", "platform": "Dockerfile FROM", "no-serve": "hack/demo",
	"certificate-identity-regexp": "cosign", "certificate-oidc-issuer": "cosign",
	"insecure-ignore-tlog": "cosign", "bundle": "cosign", "registry-cacert": "cosign", "plain-http": "helm", "new-bundle-format": "cosign",
	"admission-control-config-file": "kube-apiserver", "enable-progressive-syncs": "argocd-applicationset-controller",
}

// markdown is a doc split into its code (fenced blocks, logical lines
// with backslash continuations joined) and its inline code spans.
type markdown struct {
	file  string
	lines []string // code lines and inline spans, each with its line number
	at    []int
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

func parseMarkdown(t *testing.T, file string) markdown {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := markdown{file: file}
	fenced, cont := false, ""
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			cont += strings.TrimSuffix(l, "\\") + " "
			if !strings.HasSuffix(l, "\\") {
				m.lines, m.at = append(m.lines, cont), append(m.at, i+1)
				cont = ""
			}
			continue
		}
		for _, s := range inlineCode.FindAllStringSubmatch(l, -1) {
			m.lines, m.at = append(m.lines, s[1]), append(m.at, i+1)
		}
	}
	return m
}

var (
	pinbotCall = regexp.MustCompile(`(?:^|[\s(])pinbot((?:\s+[^\s|;&>)]+)*)`)
	flagName   = regexp.MustCompile(`^--([a-z][a-z0-9-]*)`)
)

// TestDocsNameRealFlags: a flag written after `pinbot COMMAND` is one of
// that command's flags (or a global one); a bare `--flag` in a code span
// is one of some pinbot command's, unless it is another tool's.
func TestDocsNameRealFlags(t *testing.T) {
	root := cli.NewRootCommand()
	any := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { any[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { any[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	checked := 0
	for _, file := range userDocs(t) {
		m := parseMarkdown(t, file)
		for i, l := range m.lines {
			where := file + ":" + strconv.Itoa(m.at[i])
			if call := pinbotCall.FindStringSubmatch(l); call != nil {
				args := strings.Fields(call[1])
				cmd, _, err := root.Find(args)
				if err != nil || cmd == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
					continue // prose: "pinbot proves …"
				}
				for _, a := range args {
					f := flagName.FindStringSubmatch(a)
					if f == nil {
						continue
					}
					checked++
					if cmd.Flags().Lookup(f[1]) == nil && cmd.InheritedFlags().Lookup(f[1]) == nil {
						t.Errorf("%s: pinbot %s has no flag --%s", where, cmd.Name(), f[1])
					}
				}
				continue
			}
			if f := flagName.FindStringSubmatch(strings.TrimSpace(l)); f != nil {
				checked++
				if !any[f[1]] && foreignFlags[f[1]] == "" {
					t.Errorf("%s: no pinbot command has a flag --%s (another tool's? name it in foreignFlags)", where, f[1])
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d flags in the docs; the parser lost them", checked)
	}
}

// TestDocsConfigBlocksPassTheSchema: a YAML block whose first line is
// "# .pinbot.yaml" or "# serve's config" passes that file's JSON Schema,
// which refuses unknown keys as the loaders do; a .pinbot.yaml block
// also loads as pinbot loads it (its checks, its waves).
func TestDocsConfigBlocksPassTheSchema(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{}
	c := jsonschema.NewCompiler()
	for marker, name := range map[string]string{"# .pinbot.yaml": "pinbot-repository.schema.json", "# serve's config": "pinbot-config.schema.json"} {
		f, err := os.Open(filepath.Join("docs", "schema", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(name, doc); err != nil {
			t.Fatal(err)
		}
		if schemas[marker], err = c.Compile(name); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, file := range userDocs(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range yamlBlocks(string(b)) {
			first, _, _ := strings.Cut(block.text, "\n")
			s := schemas[strings.TrimSpace(first)]
			if s == nil {
				continue
			}
			checked++
			j, err := yaml.YAMLToJSON([]byte(block.text))
			if err != nil {
				t.Errorf("%s:%d: %s", file, block.line, err)
				continue
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("%s:%d: the config block does not pass its schema: %s", file, block.line, err)
			}
			if strings.TrimSpace(first) == "# .pinbot.yaml" {
				if _, err := promote.ParseConfig(promote.ConfigFile, []byte(block.text)); err != nil {
					t.Errorf("%s:%d: the .pinbot.yaml block does not load: %s", file, block.line, err)
				}
			}
		}
	}
	if checked < 6 {
		t.Errorf("checked %d config blocks, want every marked one (6 or more)", checked)
	}
}

type block struct {
	text string
	line int
}

// yamlBlocks are the ```yaml blocks of a Markdown text.
func yamlBlocks(md string) []block {
	var out []block
	var cur *block
	for i, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```yaml"):
			cur = &block{line: i + 2}
		case cur != nil && strings.HasPrefix(l, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	testName  = regexp.MustCompile(`\bTest[A-Z]\w+`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
)

// TestDocsLinksLand: every relative link names a file that exists, and an
// anchor names a heading of it.
func TestDocsLinksLand(t *testing.T) {
	for _, file := range userDocs(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := l[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: no such file", file, target)
					continue
				}
			}
			if anchor != "" && !slices.Contains(anchors(t, dest), anchor) {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, dest, anchor)
			}
		}
	}
}

// anchors are the GitHub anchors of file's headings.
func anchors(t *testing.T, file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if h := headingRE.FindStringSubmatch(l); h != nil && !fenced {
			s := strings.ToLower(h[1])
			s = regexp.MustCompile(`[^\p{L}\p{N}\- _]`).ReplaceAllString(s, "")
			out = append(out, strings.ReplaceAll(s, " ", "-"))
		}
	}
	return out
}

// TestDocsSpeakToUsers: no test's name in a user's page (development.md
// is for those who work on pinbot).
func TestDocsSpeakToUsers(t *testing.T) {
	for _, file := range userDocs(t) {
		if filepath.Base(file) == "development.md" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if n := testName.FindString(l); n != "" {
				t.Errorf("%s:%d: names the test %s; say what it shows instead", file, i+1, n)
			}
		}
	}
	if b, _ := os.ReadFile("README.md"); bytes.Count(b, []byte("\n")) >= 400 {
		t.Errorf("README.md has %d lines, want under 400: the rest goes in docs/", bytes.Count(b, []byte("\n")))
	}
}

// TestGrafanaDashboardNamesRealMetrics: each metric the Grafana dashboard
// queries is one pinbot exports (a name its code registers), so the
// dashboard cannot go stale.
func TestGrafanaDashboardNamesRealMetrics(t *testing.T) {
	dash, err := os.ReadFile(filepath.Join("docs", "grafana", "pinbot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(dash, &v); err != nil {
		t.Fatalf("docs/grafana/pinbot.json: %s", err)
	}
	exported := map[string]bool{}
	literal := regexp.MustCompile(`"(pinbot_[a-z_]+)"`)
	err = filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			if err == nil {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range literal.FindAllSubmatch(b, -1) {
			exported[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	queried := regexp.MustCompile(`\bpinbot_[a-z_]+`).FindAllString(string(dash), -1)
	if len(queried) < 10 {
		t.Fatalf("the dashboard queries %d pinbot metrics; the test lost them", len(queried))
	}
	for _, q := range queried {
		name := q
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if n, ok := strings.CutSuffix(q, suffix); ok && exported[n] {
				name = n
			}
		}
		if !exported[name] {
			t.Errorf("the dashboard queries %s, which pinbot does not export", q)
		}
	}
}

// TestDevelopmentMapShowsEveryRoom: docs/development.md's map names every
// package of the module (by its last path element) outside hack/ and
// e2e/, so a reader sees the architecture from it.
func TestDevelopmentMapShowsEveryRoom(t *testing.T) {
	doc := string(read(t, "docs/development.md"))
	start := strings.Index(doc, "```\ncmd/pinbot")
	end := strings.Index(doc[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/development.md has no map (a code block starting with cmd/pinbot)")
	}
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z][a-z0-9]*`).FindAllString(doc[start:start+4+end], -1) {
		words[w] = true
	}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == "hack" || p == "e2e" || p == "bin" || p == "docs" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.Dir(p) == "." {
			return nil
		}
		if room := filepath.Base(filepath.Dir(p)); !words[room] {
			t.Errorf("docs/development.md's map does not name %s (package %s)", room, filepath.Dir(p))
			words[room] = true // once
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
