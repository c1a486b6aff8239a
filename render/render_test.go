package render

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/confined"
	"pinbot.dev/pinbot/internal/testenv/filetree"
)

// names lists "Kind ns/name" for each object, in order.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		ref := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			ref = ns + "/" + ref
		}
		out = append(out, o.GetKind()+" "+ref)
	}
	return out
}

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestDirPlain(t *testing.T) {
	root := filetree.Write(t, map[string]string{
		"envs/prod/a.yaml":         "# leading comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {n: '1'}\n---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: other}\n",
		"envs/prod/sub/b.yml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers: [{name: app, image: 'r.example/app@" + digestA + "'}]\n",
		"envs/prod/c.json":         `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}}]}`,
		"envs/prod/README.md":      "not a manifest",
		"envs/prod/.hidden/x.yaml": "this: is skipped",
		"envs/prod/empty.yaml":     "",
		"envs/dev/d.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dev}\n",
	})
	got, err := FS(dirFS(t, root), "envs/prod")
	if err != nil {
		t.Fatalf("Render: %s", err)
	}
	want := []string{"ConfigMap one", "ConfigMap other/two", "Service svc", "Deployment web"}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// Numbers decode as int64, as the unstructured helpers and kstatus expect.
	if n, found, err := unstructured.NestedInt64(got[3].Object, "spec", "replicas"); err != nil || !found || n != 3 {
		t.Errorf("spec.replicas = %d, %t, %v; want 3", n, found, err)
	}
	all, err := FS(dirFS(t, root), ".")
	if err != nil || len(all) != 5 {
		t.Errorf("Dir(root) = %d objects, %v; want 5", len(all), err)
	}
}

func TestDirErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		path  string
		want  string
		file  string
		line  int
	}{
		{name: "syntax", files: map[string]string{"app/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n"},
			path: "app", want: "app/a.yaml:", file: "app/a.yaml"},
		{name: "no kind", files: map[string]string{"app/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nmetadata: {name: x}\n"},
			path: "app", want: "render: app/a.yaml:5: object has no kind", file: "app/a.yaml", line: 5},
		{name: "no name", files: map[string]string{"app/z/b.yml": "apiVersion: v1\nkind: ConfigMap\n"},
			path: "app", want: "render: app/z/b.yml:1: ConfigMap has no metadata.name", file: "app/z/b.yml", line: 1},
		{name: "not a mapping", files: map[string]string{"app/a.yaml": "- a\n- b\n"},
			path: "app", want: "render: app/a.yaml:1: document is not a mapping", file: "app/a.yaml", line: 1},
		{name: "missing path", files: map[string]string{"x/a.yaml": ""},
			path: "envs/prod", want: "render: envs/prod: no such directory in the repository", file: "envs/prod"},
		{name: "escaping path", files: map[string]string{"x/a.yaml": ""},
			path: "../etc", want: "path escapes the repository", file: "../etc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filetree.Write(t, tc.files)
			_, err := FS(dirFS(t, root), tc.path)
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("Dir error = %v, want a *Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) || re.File != tc.file || (tc.line != 0 && re.Line != tc.line) {
				t.Errorf("Dir error = %q (file %q line %d), want it to contain %q, file %q line %d", err, re.File, re.Line, tc.want, tc.file, tc.line)
			}
		})
	}
}

func TestDirKustomize(t *testing.T) {
	root := filetree.Write(t, map[string]string{
		"base/kustomization.yaml":      "resources: [deploy.yaml]\n",
		"base/deploy.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: app, image: 'r.example/app:v1'}]\n",
		"envs/prod/kustomization.yaml": "namespace: prod\nresources: [../../base, cm.yaml]\nimages:\n- name: r.example/app\n  digest: " + digestB + "\n",
		"envs/prod/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
	})
	got, err := FS(dirFS(t, root), "envs/prod")
	if err != nil {
		t.Fatalf("Render: %s", err)
	}
	if diff := cmp.Diff([]string{"Deployment prod/web", "ConfigMap prod/settings"}, names(got)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	containers, _, _ := unstructured.NestedSlice(got[0].Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("containers = %+v, want one", containers)
	}
	if image := containers[0].(map[string]any)["image"]; image != "r.example/app@"+digestB {
		t.Errorf("image = %q, want r.example/app@%s", image, digestB)
	}
}

func TestDirKustomizeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"remote base", map[string]string{"app/kustomization.yaml": "resources:\n- cm.yaml\n- https://github.com/org/repo//base?ref=v1\n", "app/cm.yaml": ""},
			`render: app/kustomization.yaml:3: remote resources "https://github.com/org/repo//base?ref=v1" refused`},
		{"git ssh base", map[string]string{"app/kustomization.yaml": "bases:\n- git@github.com:org/repo.git\n"},
			`render: app/kustomization.yaml:2: remote bases "git@github.com:org/repo.git" refused`},
		{"hosted path", map[string]string{"app/kustomization.yaml": "components:\n- github.com/org/repo/comp\n"},
			`remote components "github.com/org/repo/comp" refused`},
		{"remote in a local base", map[string]string{
			"app/kustomization.yaml":  "resources: [../base]\n",
			"base/kustomization.yaml": "resources:\n- http://example.com/x.yaml\n",
		}, `render: base/kustomization.yaml:2: remote resources "http://example.com/x.yaml" refused`},
		{"outside the repository", map[string]string{"app/kustomization.yaml": "resources: [../../etc]\n"},
			`render: app/kustomization.yaml:1: "../../etc" is outside the repository`},
		{"missing", map[string]string{"app/kustomization.yaml": "resources: [nope.yaml]\n"},
			`"nope.yaml" not found in the repository`},
		{"build error", map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": "kind: [\n"},
			"render: app/kustomization.yaml: kustomize build:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FS(dirFS(t, filetree.Write(t, tc.files)), "app")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dir error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDirKustomizeSymlinkOutOfRepo(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n"})
	root := filetree.Write(t, map[string]string{"app/kustomization.yaml": "resources: [link.yaml]\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "app", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := FS(dirFS(t, root), "app")
	if err == nil || !strings.Contains(err.Error(), `render: app/kustomization.yaml:1: "link.yaml" is a symbolic link: pinbot follows no link`) {
		t.Errorf("Dir error = %v, want a refusal of the link", err)
	}
}

// dirFS is the directory root as pinbot reads a checkout on disk
// (internal/confined: no link followed, regular files only, bounded).
func dirFS(t *testing.T, root string) fs.FS {
	t.Helper()
	c, err := confined.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPlainDirFollowsNoLink: a plain directory's links to a manifest
// outside the repository, to /dev/zero and to a FIFO are skipped, not
// read: the render holds the repository's own manifest only, at once.
func TestPlainDirFollowsNoLink(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: outside}\n"})
	root := filetree.Write(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside}\n"})
	for name, target := range map[string]string{"out.yaml": filepath.Join(outside, "secret.yaml"), "zero.yaml": "/dev/zero", "dir": outside} {
		if err := os.Symlink(target, filepath.Join(root, "app", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "app", "fifo.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() {
		objs, err := FS(dirFS(t, root), "app")
		if err != nil {
			t.Error(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.GetName())
		}
		done <- names
	}()
	select {
	case names := <-done:
		if !slices.Equal(names, []string{"inside"}) {
			t.Errorf("rendered %q, want the repository's own ConfigMap alone", names)
		}
	case <-time.After(time.Minute):
		t.Fatal("the render is reading a link or a FIFO")
	}
}

// TestRenderStopsWithTheContext: a chart whose templates loop is given up
// on when the render's context ends, instead of holding the caller (a
// sync, a SIGTERM).
func TestRenderStopsWithTheContext(t *testing.T) {
	root := filetree.Write(t, map[string]string{
		"chart/Chart.yaml":          "apiVersion: v2\nname: busy\nversion: 0.1.0\n",
		"chart/templates/loop.yaml": "{{ range until 20000 }}{{ range until 20000 }}{{ end }}{{ end }}\n",
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := FS(dirFS(t, root), "chart", WithContext(ctx))
	if err == nil || !strings.Contains(err.Error(), "render stopped") {
		t.Errorf("FS = %v, want the render stopped", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the render returned after %s, not when its context ended", took)
	}
}
