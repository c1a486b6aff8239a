package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"slices"
	"testing"
	"testing/fstest"

	"pinbot.dev/pinbot/render"
)

// hashedFS is an fstest.MapFS whose hashes are Git's in spirit: a file's
// covers its bytes, a directory's everything under it.
type hashedFS struct{ fstest.MapFS }

func (h hashedFS) Hash(name string) string {
	if f, ok := h.MapFS[name]; ok && !f.Mode.IsDir() {
		sum := sha256.Sum256(f.Data)
		return hex.EncodeToString(sum[:])
	}
	entries, err := fs.ReadDir(h.MapFS, name)
	if err != nil {
		return ""
	}
	sum := sha256.New()
	for _, e := range entries {
		sum.Write([]byte(e.Name() + "=" + h.Hash(path.Join(name, e.Name())) + "\n"))
	}
	return hex.EncodeToString(sum.Sum(nil))
}

func TestReadFSNotesWhatARenderReads(t *testing.T) {
	deploy := func(image string) []byte {
		return []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: web, image: " + image + "}]\n")
	}
	base := fstest.MapFS{
		"apps/web/deploy.yaml": {Data: deploy("web:v1")},
		"apps/api/deploy.yaml": {Data: deploy("api:v1")},
		"README.md":            {Data: []byte("fleet\n")},
	}
	reads := newReadFS(hashedFS{base})
	if _, err := render.FS(reads, "apps/web"); err != nil {
		t.Fatal(err)
	}
	read := reads.read()
	var names []string
	for _, in := range read {
		names = append(names, in.name)
	}
	if !slices.Contains(names, "apps/web") || slices.ContainsFunc(names, func(n string) bool { return under(n, "apps/api") || n == "README.md" || n == "." }) {
		t.Fatalf("read %v, want apps/web and nothing of apps/api, README.md or the root", names)
	}

	for _, tc := range []struct {
		name   string
		change func(fstest.MapFS)
		want   bool
	}{
		{"nothing", func(fstest.MapFS) {}, false},
		{"another app", func(m fstest.MapFS) { m["apps/api/deploy.yaml"] = &fstest.MapFile{Data: deploy("api:v2")} }, false},
		{"a file elsewhere", func(m fstest.MapFS) { m["README.md"] = &fstest.MapFile{Data: []byte("more\n")} }, false},
		{"the app's file", func(m fstest.MapFS) { m["apps/web/deploy.yaml"] = &fstest.MapFile{Data: deploy("web:v2")} }, true},
		{"a file added to the app", func(m fstest.MapFS) { m["apps/web/svc.yaml"] = &fstest.MapFile{Data: []byte("kind: Service\n")} }, true},
		{"the app removed", func(m fstest.MapFS) { delete(m, "apps/web/deploy.yaml") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := fstest.MapFS{}
			for k, v := range base {
				next[k] = v
			}
			tc.change(next)
			if got := changedIn(read, hashedFS{next}); got != tc.want {
				t.Errorf("changedIn = %v, want %v (read %v)", got, tc.want, names)
			}
		})
	}
}

func TestChangedInIsCarefulWhenUnsure(t *testing.T) {
	files := fstest.MapFS{"a/x.yaml": {Data: []byte("kind: ConfigMap\n")}}
	if !changedIn(nil, hashedFS{files}) {
		t.Error("an app never rendered: want changed")
	}
	if !changedIn([]input{{name: "a", hash: "x"}}, files) {
		t.Error("files that cannot name their objects: want changed")
	}
	if newReadFS(files).read() != nil {
		t.Error("reads of files that cannot name their objects: want none noted")
	}
	reads := newReadFS(hashedFS{files})
	if _, err := fs.ReadDir(reads, "."); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadFile(reads, "a/x.yaml"); err != nil {
		t.Fatal(err)
	}
	if got := reads.read(); len(got) != 1 || got[0].name != "." {
		t.Errorf("a render that listed the root read %v, want the root alone (everything under it)", got)
	}
	missing := newReadFS(hashedFS{files})
	_, _ = fs.Stat(missing, "a/kustomization.yaml")
	changed := fstest.MapFS{"a/x.yaml": files["a/x.yaml"], "a/kustomization.yaml": {Data: []byte("resources: [x.yaml]\n")}}
	if !changedIn(missing.read(), hashedFS{changed}) {
		t.Error("a file looked for and then added: want changed")
	}
}
