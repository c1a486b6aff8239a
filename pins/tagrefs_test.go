package pins

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/filetree"
)

// TestScanTagReferences: WithTagReferences lists the references a gate
// must see besides the pins: by tag, by nothing at all (a manifest's
// "latest"), a kustomize override by tag, a Dockerfile FROM by tag, in
// files that hold no digest; and a Set pinning tags never touches the
// bare one.
func TestScanTagReferences(t *testing.T) {
	files := map[string]string{
		"apps/pod.yaml":        "kind: Pod\nspec:\n  containers:\n  - name: a\n    image: nginx:1.27@" + digestA + "\n  - name: b\n    image: nginx\n",
		"apps/side.yaml":       "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: ghcr.io/org/tool:v3\n",
		"k/kustomization.yaml": "images:\n- name: ghcr.io/org/app\n  newTag: \"2.0\"\n",
		"Dockerfile":           "FROM golang:1.26 AS build\nFROM scratch\n",
	}
	dir := filetree.Write(t, files)
	got, err := Scan(dir, WithTagReferences())
	if err != nil {
		t.Fatal(err)
	}
	want := []Pin{
		{File: "Dockerfile", Line: 1, Column: 17, Kind: KindDockerfile, Image: "index.docker.io/library/golang", Tag: "1.26"},
		{File: "apps/pod.yaml", Line: 5, Column: 23, Kind: KindManifest, Image: "index.docker.io/library/nginx", Tag: "1.27", Digest: digestA},
		{File: "apps/pod.yaml", Line: 7, Column: 17, Kind: KindManifest, Image: "index.docker.io/library/nginx"},
		{File: "apps/side.yaml", Line: 5, Column: 31, Kind: KindManifest, Image: "ghcr.io/org/tool", Tag: "v3"},
		{File: "k/kustomization.yaml", Line: 4, Column: 11, Kind: KindKustomize, Image: "ghcr.io/org/app", Tag: "2.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Scan with tag references (-want +got):\n%s", diff)
	}
	plain, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[1:2], plain); diff != "" {
		t.Errorf("Scan lists only pins (-want +got):\n%s", diff)
	}
	if _, err := Set(dir, Update{Image: "nginx", Digest: digestB, PinTags: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "apps/pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "kind: Pod\nspec:\n  containers:\n  - name: a\n    image: nginx:1.27@" + digestB + "\n  - name: b\n    image: nginx\n"; string(b) != want {
		t.Errorf("after Set:\n%s\nwant\n%s", b, want)
	}
}
