package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/filetree"
)

var (
	pinsDigestA = "sha256:" + strings.Repeat("a", 64)
	pinsDigestB = "sha256:" + strings.Repeat("b", 64)
)

// runPins runs the CLI and returns its exit code, stdout and stderr.
func runPins(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Execute(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// pinsTree writes a small manifest tree and returns its directory.
func pinsTree(t *testing.T) string {
	t.Helper()
	return filetree.Write(t, map[string]string{
		"apps/web.yaml": "kind: Pod\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27@" + pinsDigestA + " # web\n",
		"Dockerfile":    "FROM 127.0.0.1:5000/org/base@" + pinsDigestA + "\n",
	})
}

func TestPinsListJSON(t *testing.T) {
	dir := pinsTree(t)
	code, out, errOut := runPins(t, "pins", "list", "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, out)
	}
	want := []map[string]any{
		{"file": "Dockerfile", "line": 1.0, "column": 30.0, "kind": "dockerfile", "image": "127.0.0.1:5000/org/base",
			"tag": "", "digest": pinsDigestA, "ignored": false},
		{"file": "apps/web.yaml", "line": 5.0, "column": 23.0, "kind": "manifest", "image": "index.docker.io/library/nginx",
			"tag": "1.27", "digest": pinsDigestA, "ignored": false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pins list -o json (-want +got):\n%s", diff)
	}
}

func TestPinsListText(t *testing.T) {
	dir := pinsTree(t)
	code, out, errOut := runPins(t, "pins", "list", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"FILE:LINE:COL", "apps/web.yaml:5:23", "index.docker.io/library/nginx", "1.27", "sha256:aaaaaaaaaaaa\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPinsSetJSON(t *testing.T) {
	dir := pinsTree(t)
	code, out, errOut := runPins(t, "pins", "set", "nginx@"+pinsDigestB, "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Changes []map[string]any `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	want := []map[string]any{{
		"file": "apps/web.yaml", "line": 5.0, "kind": "manifest", "image": "index.docker.io/library/nginx",
		"oldDigest": pinsDigestA, "newDigest": pinsDigestB, "oldTag": "1.27", "newTag": "1.27",
		"before": "    image: nginx:1.27@" + pinsDigestA + " # web",
		"after":  "    image: nginx:1.27@" + pinsDigestB + " # web",
	}}
	if diff := cmp.Diff(want, got.Changes); diff != "" {
		t.Errorf("pins set -o json (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(dir, "apps/web.yaml"))
	if err != nil || !strings.Contains(string(b), "nginx:1.27@"+pinsDigestB+" # web\n") {
		t.Errorf("apps/web.yaml not rewritten: %s %v", b, err)
	}

	// Setting it again changes nothing, and says so with an empty list.
	code, out, _ = runPins(t, "pins", "set", "nginx@"+pinsDigestB, "--dir", dir, "-o", "json")
	if code != 0 || strings.TrimSpace(out) != `{"changes":[],"skipped":[]}` {
		t.Errorf("second set: exit %d, output %q", code, out)
	}
}

func TestPinsSetText(t *testing.T) {
	dir := pinsTree(t)
	code, out, errOut := runPins(t, "pins", "set", "127.0.0.1:5000/org/base@"+pinsDigestB, "--dir", dir, "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "Dockerfile:1  - FROM 127.0.0.1:5000/org/base@" + pinsDigestA + "\n" +
		"Dockerfile:1  + FROM 127.0.0.1:5000/org/base@" + pinsDigestB + "\n" +
		"would change (dry run) 1 lines in 1 files\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if !strings.Contains(string(b), pinsDigestA) {
		t.Errorf("--dry-run wrote the file: %s", b)
	}
}

func TestPinsExitCodes(t *testing.T) {
	dir := pinsTree(t)
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("image: redis@"+pinsDigestA+"\n  x: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"missing argument", []string{"pins", "set", "--dir", dir}, 2, "accepts 1 arg"},
		{"extra argument", []string{"pins", "list", "x"}, 2, "accepts 0 arg"},
		{"unknown flag", []string{"pins", "list", "--nope"}, 2, "unknown flag"},
		{"invalid digest", []string{"pins", "set", "nginx@sha256:abc", "--dir", dir}, 2, `argument "nginx@sha256:abc"`},
		{"empty digest", []string{"pins", "set", "nginx@", "--dir", dir}, 2, `argument "nginx@"`},
		{"no digest", []string{"pins", "set", "nginx", "--dir", dir}, 2, `argument "nginx"`},
		{"bad --tag", []string{"pins", "set", "nginx@" + pinsDigestB, "--tag", "bad tag", "--dir", dir}, 2, `flag --tag "bad tag": invalid tag`},
		{"bad tag in the argument", []string{"pins", "set", "nginx:-x@" + pinsDigestB, "--dir", dir}, 2, `argument "nginx:-x@`},
		{"huge invalid digest is clipped", []string{"pins", "set", "nginx@sha256:" + strings.Repeat("z", 1<<20), "--dir", dir}, 2, "(1048589 bytes)"},
		{"tag conflict", []string{"pins", "set", "nginx:1@" + pinsDigestB, "--tag", "2", "--dir", dir}, 2, "conflicts"},
		{"malformed file mentioning the image", []string{"pins", "set", "redis@" + pinsDigestB, "--dir", dir}, 1, "bad.yaml:1: redis@" + pinsDigestA + " looks like a pin"},
		{"malformed file not mentioning the image", []string{"pins", "set", "nginx@" + pinsDigestB, "--dir", dir}, 0, "bad.yaml"},
		{"nothing to change", []string{"pins", "set", "busybox@" + pinsDigestB, "--dir", dir}, 0, ""},
		{"missing directory", []string{"pins", "list", "--dir", filepath.Join(dir, "nope")}, 1, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runPins(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.stderr)
			}
		})
	}
}

func TestPinsSetTagAndPinTags(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"pod.yaml":    "image: nginx:1.27\n",
		"values.yaml": "image:\n  repository: nginx\n  tag: \"1.27\"\n",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A tag reference is pinned only to its own tag: 1.27 is not 1.28.
	code, out, errOut := runPins(t, "pins", "set", "nginx:1.28@"+pinsDigestB, "--pin-tags", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "nothing to change: no pin of nginx differs from " + pinsDigestB + "\n" +
		"skipped pod.yaml:1 (tag 1.27): a tag reference is pinned only to its own tag's digest, and the set's tag is 1.28\n" +
		"skipped values.yaml:4 (tag 1.27): a tag reference is pinned only to its own tag's digest, and the set's tag is 1.28\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	code, out, errOut = runPins(t, "pins", "set", "nginx:1.27@"+pinsDigestB, "--pin-tags", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want = "pod.yaml:1  - image: nginx:1.27\n" +
		"pod.yaml:1  + image: nginx:1.27@" + pinsDigestB + "\n" +
		"values.yaml:4  +   digest: " + pinsDigestB + "\n" +
		"changed 2 lines in 2 files\n" +
		"unverified: values.yaml is not rendered by a chart in the repository, so pinbot cannot check that its digest: takes effect\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestPinsSetVariants(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"Dockerfile": "FROM python:3.14.6-slim@" + pinsDigestA + "\nFROM python:3.14.6-alpine@" + pinsDigestA + "\n",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// No tag named and two variants: refused, nothing written.
	code, out, errOut := runPins(t, "pins", "set", "python@"+pinsDigestB, "--dir", dir)
	if code != 1 || !strings.Contains(errOut, "-slim at Dockerfile:1; -alpine at Dockerfile:2") || !strings.Contains(errOut, "--any-variant") {
		t.Errorf("exit %d, stderr %q; want 1 naming both variants and --any-variant", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "Dockerfile")); string(b) != files["Dockerfile"] {
		t.Errorf("refused set wrote:\n%s", b)
	}
	// A named tag keeps to its variant, and JSON lists the skipped pin.
	code, out, errOut = runPins(t, "pins", "set", "python:3.14.7-alpine@"+pinsDigestB, "--dir", dir, "--dry-run", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Changes []struct {
			File   string
			Line   int
			NewTag string `json:"newTag"`
		}
		Skipped []struct {
			File, Tag, Reason string
			Line              int
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(got.Changes) != 1 || got.Changes[0].Line != 2 || got.Changes[0].NewTag != "3.14.7-alpine" {
		t.Errorf("changes = %+v, want line 2 only, tagged 3.14.7-alpine", got.Changes)
	}
	if len(got.Skipped) != 1 || got.Skipped[0].File != "Dockerfile" || got.Skipped[0].Line != 1 || got.Skipped[0].Tag != "3.14.6-slim" || got.Skipped[0].Reason == "" {
		t.Errorf("skipped = %+v, want Dockerfile:1 3.14.6-slim with a reason", got.Skipped)
	}
	// --any-variant sets both.
	code, out, errOut = runPins(t, "pins", "set", "python@"+pinsDigestB, "--dir", dir, "--any-variant")
	if code != 0 || !strings.Contains(out, "changed 2 lines in 1 files") {
		t.Errorf("exit %d, out %q, stderr %q; want both lines changed", code, out, errOut)
	}
}

func TestPinsListJSONEscapes(t *testing.T) {
	dir := t.TempDir()
	name := `a "quoted" & <odd>.yaml`
	if err := os.WriteFile(filepath.Join(dir, name), []byte("image: nginx@"+pinsDigestA+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPins(t, "pins", "list", "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []struct{ File string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(got) != 1 || got[0].File != name {
		t.Errorf("files = %+v, want %q", got, name)
	}
}

// TestPinsListWarnsMalformed: every malformed YAML file is named on
// stderr at the offending line, whether or not it holds a digest.
func TestPinsListWarnsMalformed(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"ok.yaml":       "image: nginx@" + pinsDigestA + "\n",
		"nodigest.yaml": "a: 1\nb:\n  c: 2\n  d: 3\n  e: 4\n  f: @bad\n",
		"flow.yaml":     "a: 1\nb: [x, y\nc: 3\n",
		"partial.yaml":  "image: redis@" + pinsDigestB + "\n---\n{{- if .Values.x }}\nkind: A\n{{- end }}\n",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runPins(t, "pins", "list", "--dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"nodigest.yaml:6:", "flow.yaml:2:", "partial.yaml:3:"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks a warning %q:\n%s", want, errOut)
		}
	}
	var got []struct{ File string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0].File != "ok.yaml" || got[1].File != "partial.yaml" {
		t.Errorf("listed %+v, want ok.yaml and the document of partial.yaml that parses", got)
	}
}

// TestPinsJSONFailure: with -o json a failure is also one JSON object on
// stdout, and the exit code is unchanged.
func TestPinsJSONFailure(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("kind: Pod\nspec:\n  containers:\n  - image: nginx:1.27@"+pinsDigestA+"\n    args: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPins(t, "pins", "set", "nginx:1.27@"+pinsDigestB, "--dir", dir, "-o", "json")
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr %s", code, errOut)
	}
	var got struct {
		Error string
		File  string
		Line  int
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if got.File != "bad.yaml" || got.Line != 4 || !strings.Contains(got.Error, "looks like a pin") {
		t.Errorf("JSON failure = %+v, want bad.yaml line 4", got)
	}
	code, out, _ = runPins(t, "pins", "set", "nginx@sha256:bad", "--dir", dir, "-o", "json")
	if code != 2 || !strings.Contains(out, `"error":`) || !strings.Contains(out, `"line":0`) {
		t.Errorf("usage error: exit %d, stdout %q; want 2 and a JSON object", code, out)
	}
}

// TestPinsSetHelmChart: --pin-tags renders a chart in the tree and pins its
// values in the form its templates read: here repository:tag.
func TestPinsSetHelmChart(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"chart/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":           "image:\n  repository: nginx\n  tag: \"1.27\"\n",
		"chart/templates/deploy.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
	}
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runPins(t, "pins", "set", "nginx:1.27@"+pinsDigestB, "--pin-tags", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "chart/values.yaml:3  - " + `  tag: "1.27"` + "\n" +
		"chart/values.yaml:3  + " + `  tag: "1.27@` + pinsDigestB + `"` + "\n" +
		"changed 1 lines in 1 files\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// TestPinsHostileTree runs pins list and pins set over a tree built to
// make pinbot write or read outside it: links out of it (absolute and
// relative, to a pinned file and to a FIFO), a journal of the old
// protocol planted in the tree and naming the outside file, a tracked
// file named like a staged file, a FIFO, and a file named with a line
// break. Nothing outside the tree is read or changed, the tree's own
// files stay the repository's, and the odd name is printed quoted.
func TestPinsHostileTree(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	base := t.TempDir()
	tree, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	victim := filepath.Join(outside, "victim.yaml")
	victimBody := "image: nginx:1.27@" + pinsDigestA + "\n"
	files := map[string]string{
		"apps/web.yaml":                "image: nginx:1.27@" + pinsDigestA + "\n",
		"apps/odd\nname.yaml":          "image: nginx:1.27@" + pinsDigestA + "\n",
		"apps/.web.yaml.pinbot-123456": "the repository's notes\n",
		".pinbot-journal":              `{"version":1,"phase":"committing","files":[{"file":"../outside/victim.yaml","size":` + fmt.Sprint(len(victimBody)) + `}]}`,
	}
	for p, c := range files {
		full := filepath.Join(tree, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(outside, 0o755)
	os.WriteFile(victim, []byte(victimBody), 0o644)
	fifo := filepath.Join(outside, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"apps/abs.yaml":   victim,
		"apps/rel.yaml":   "../../outside/victim.yaml",
		"apps/fifo.yaml":  fifo,
		"apps/outside":    outside,
		"apps/zero.yaml":  "/dev/zero",
		"apps/.pinbot-jl": "../.pinbot-journal",
	} {
		if err := os.Symlink(target, filepath.Join(tree, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(tree, "apps", "pipe.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	opened := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				opened++
				syscall.Close(fd)
			}
		}
	}()

	code, out, errOut := runPins(t, "pins", "list", "--dir", tree)
	if code != 0 || !strings.Contains(out, `"apps/odd\nname.yaml":1:`) || strings.Contains(out, "victim") || strings.Contains(out, "abs.yaml") {
		t.Errorf("pins list: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"--dry-run"}, nil} {
		code, out, errOut = runPins(t, append([]string{"pins", "set", "nginx:1.27@" + pinsDigestB, "--dir", tree}, args...)...)
		if code != 0 || !strings.Contains(out, "2 lines in 2 files") {
			t.Errorf("pins set %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	close(stop)
	<-watched
	if opened > 0 {
		t.Errorf("the FIFO outside the tree was opened %d times", opened)
	}
	if b, _ := os.ReadFile(victim); string(b) != victimBody {
		t.Errorf("the file outside the tree was changed: %q", b)
	}
	for _, p := range []string{"apps/.web.yaml.pinbot-123456", ".pinbot-journal"} {
		if b, _ := os.ReadFile(filepath.Join(tree, filepath.FromSlash(p))); string(b) != files[p] {
			t.Errorf("the repository's %s was changed or removed: %q", p, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(tree, "apps", "web.yaml")); !strings.Contains(string(b), pinsDigestB) {
		t.Errorf("apps/web.yaml was not set: %q", b)
	}
}
