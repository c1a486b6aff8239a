package pins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/testenv/filetree"
)

var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = "sha256:" + strings.Repeat("b", 64)
	digestC = "sha256:" + strings.Repeat("c", 64)
)

func TestScan(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"apps/pod.yaml": "kind: Pod\nspec:\n  containers:\n  - name: a\n    image: nginx:1.27@" + digestA + "\n" +
			"  - name: b\n    image: '127.0.0.1:5000/org/app@" + digestB + "' # pinbot: ignore\n" +
			"  - name: c\n    image: nginx:1.27\n",
		"values.yaml":        "image:\n  repository: org/app\n  tag: v2\n  digest: " + digestC + "\n",
		"kustomization.yaml": "images:\n- name: nginx\n  newName: ghcr.io/org/nginx\n  newTag: \"1\"\n  digest: " + digestA + "\n",
		"pins.yaml":          "pins:\n  builder: {image: localhost:5000/builder, digest: " + digestB + "}\n",
		"build/Dockerfile":   "FROM --platform=$BUILDPLATFORM golang:1.26@" + digestC + " AS build\nFROM build\n",
		"docs/readme.md":     "image: nginx@" + digestA + "\n",
		"nodigest.yaml":      "image: nginx:1.27\n",
	})
	pins, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pin{
		{File: "apps/pod.yaml", Line: 5, Column: 23, Kind: KindManifest, Image: "index.docker.io/library/nginx", Tag: "1.27", Digest: digestA},
		{File: "apps/pod.yaml", Line: 7, Column: 36, Kind: KindManifest, Image: "127.0.0.1:5000/org/app", Digest: digestB, Ignored: true},
		{File: "build/Dockerfile", Line: 1, Column: 44, Kind: KindDockerfile, Image: "index.docker.io/library/golang", Tag: "1.26", Digest: digestC},
		{File: "kustomization.yaml", Line: 5, Column: 11, Kind: KindKustomize, Image: "ghcr.io/org/nginx", Tag: "1", Digest: digestA},
		{File: "pins.yaml", Line: 2, Column: 52, Kind: KindPinsFile, Image: "localhost:5000/builder", Digest: digestB},
		{File: "values.yaml", Line: 4, Column: 11, Kind: KindHelm, Image: "index.docker.io/org/app", Tag: "v2", Digest: digestC},
	}
	if diff := cmp.Diff(want, pins); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
}

func TestSetMalformedYAMLMentioningImage(t *testing.T) {
	files := map[string]string{
		"a/good.yaml": "image: nginx@" + digestA + "\n",
		"b/bad.yaml":  "kind: Pod\nspec:\n  containers:\n  - image: nginx@" + digestA + "\n    args: [unclosed\n",
		"c/good.yaml": "image: nginx@" + digestA + "\n",
	}
	dir := filetree.Write(t, files)
	before := readTree(t, dir)
	_, err := Set(dir, Update{Image: "nginx", Digest: digestB})
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Set returned %v, want a *SyntaxError", err)
	}
	if se.File != "b/bad.yaml" || se.Line < 1 {
		t.Errorf("SyntaxError names %s:%d, want b/bad.yaml and a line", se.File, se.Line)
	}
	if want := fmt.Sprintf("b/bad.yaml:%d: ", se.Line); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if diff := cmp.Diff(before, readTree(t, dir)); diff != "" {
		t.Errorf("Set wrote despite the error (-before +after):\n%s", diff)
	}
}

func TestSetMalformedYAMLNotMentioningImage(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"good.yaml":  "image: nginx@" + digestA + "\n",
		"other.yaml": "image: redis@" + digestA + "\n  : [\n",
	})
	var warned []string
	changes, err := Set(dir, Update{Image: "nginx", Digest: digestB}, WithWarnings(func(file string, err error) {
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line < 1 {
			t.Errorf("warning for %s is %v, want a *SyntaxError with a line", file, err)
		}
		warned = append(warned, file)
	}))
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	if diff := cmp.Diff([]string{"other.yaml"}, warned); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if len(changes) != 1 || changes[0].File != "good.yaml" {
		t.Errorf("changes = %+v, want one in good.yaml", changes)
	}
}

func TestInvalidDigest(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	for _, d := range []string{
		"",
		"sha256:abc",
		"sha256:" + strings.Repeat("A", 64),
		"sha512:" + strings.Repeat("a", 64),
		"sha256:" + strings.Repeat("a", 65),
		"sha256:" + strings.Repeat("g", 64),
		strings.Repeat("a", 64),
	} {
		t.Run(d, func(t *testing.T) {
			u := Update{Image: "nginx", Digest: d}
			// A missing directory proves the digest is refused before
			// any file is read.
			if _, err := Set(missing, u); !errors.Is(err, imageref.ErrInvalidDigest) {
				t.Errorf("Set: %v, want ErrInvalidDigest", err)
			}
			if _, err := Plan(missing, u); !errors.Is(err, imageref.ErrInvalidDigest) {
				t.Errorf("Plan: %v, want ErrInvalidDigest", err)
			}
			if _, _, err := Rewrite("a.yaml", []byte("image: nginx@"+digestA), u); !errors.Is(err, imageref.ErrInvalidDigest) {
				t.Errorf("Rewrite: %v, want ErrInvalidDigest", err)
			}
		})
	}
}

func TestInvalidUpdate(t *testing.T) {
	for _, u := range []Update{
		{Image: "", Digest: digestB},
		{Image: "Not/Valid", Digest: digestB},
		{Image: "https://example.com/app", Digest: digestB},
		{Image: "nginx", Digest: digestB, Tag: "-bad"},
		{Image: "nginx", Digest: digestB, Tag: "a b"},
	} {
		if _, err := Plan(t.TempDir(), u); err == nil {
			t.Errorf("Plan(%+v) succeeded, want an error", u)
		}
	}
}

func TestSymlinks(t *testing.T) {
	outside := filetree.Write(t, map[string]string{
		"out.yaml":      "image: nginx@" + digestA + "\n",
		"dir/more.yaml": "image: nginx@" + digestA + "\n",
	})
	outsideBefore := readTree(t, outside)
	dir := filetree.Write(t, map[string]string{"real.yaml": "image: nginx@" + digestA + "\n"})
	for link, target := range map[string]string{
		"link-out.yaml": filepath.Join(outside, "out.yaml"),
		"link-dir":      filepath.Join(outside, "dir"),
		"link-in.yaml":  "real.yaml",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	pins, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) != 1 || pins[0].File != "real.yaml" {
		t.Errorf("Scan = %+v, want only real.yaml's pin", pins)
	}
	changes, err := Set(dir, Update{Image: "nginx", Digest: digestB})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].File != "real.yaml" {
		t.Errorf("Set = %+v, want one change in real.yaml", changes)
	}
	if diff := cmp.Diff(outsideBefore, readTree(t, outside)); diff != "" {
		t.Errorf("Set wrote outside the tree (-before +after):\n%s", diff)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link-in.yaml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link-in.yaml is no longer a symlink: %v", err)
	}
}

func TestSetKeepsFileMode(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"private.yaml": "image: nginx@" + digestA + "\n",
		"Dockerfile":   "FROM nginx@" + digestA + "\n",
	})
	modes := map[string]os.FileMode{"private.yaml": 0o600, "Dockerfile": 0o755}
	for f, m := range modes {
		if err := os.Chmod(filepath.Join(dir, f), m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Set(dir, Update{Image: "nginx", Digest: digestB}); err != nil {
		t.Fatal(err)
	}
	for f, m := range modes {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != m {
			t.Errorf("%s mode = %v, want %v", f, fi.Mode().Perm(), m)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries after Set, want 2 (no temporary files)", len(entries))
	}
}

func TestSetAllOrNothing(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"a.yaml": "image: nginx@" + digestA + "\n",
		"b.yaml": "image: nginx@" + digestA + "\n",
		"z.yaml": "image: nginx:1@" + digestA + "\nargs: [unclosed\n",
	})
	before := readTree(t, dir)
	_, err := Set(dir, Update{Image: "nginx", Digest: digestB})
	var se *SyntaxError
	if !errors.As(err, &se) || se.File != "z.yaml" {
		t.Fatalf("Set: %v, want a *SyntaxError in z.yaml", err)
	}
	if diff := cmp.Diff(before, readTree(t, dir)); diff != "" {
		t.Errorf("Set wrote despite the error (-before +after):\n%s", diff)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("directory holds %d entries after a failed Set, want 3 (no temporary files)", len(entries))
	}
}

func TestDigestsTableAndInclude(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"prod/pod.yaml":   "image: nginx@" + digestA + "\n",
		"prod/Dockerfile": "FROM nginx@" + digestA + "\n",
		"prod/other.yaml": "image: nginx:1@" + digestC + "\n",
		"dev/pod.yaml":    "image: nginx@" + digestA + "\n",
	})
	changes, err := Set(dir, Update{
		Image:   "docker.io/library/nginx:ignored-tag",
		Include: func(f string) bool { return strings.HasPrefix(f, "prod/") },
		Digests: map[PinKey]string{
			{File: "prod/pod.yaml", Line: 1, Digest: digestA}:   digestB,
			{File: "prod/Dockerfile", Line: 1, Digest: digestA}: digestC,
			{File: "dev/pod.yaml", Line: 1, Digest: digestA}:    digestB, // not included
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range changes {
		got[c.File] = c.NewDigest
	}
	if diff := cmp.Diff(map[string]string{"prod/pod.yaml": digestB, "prod/Dockerfile": digestC}, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "dev/pod.yaml"))
	if !strings.Contains(string(b), digestA) {
		t.Errorf("Include did not keep dev/pod.yaml: %s", b)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "prod/other.yaml"))
	if !strings.Contains(string(b), digestC) {
		t.Errorf("a pin missing from Digests changed: %s", b)
	}
}

func TestDigestsTableValidated(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	_, err := Set(missing, Update{Image: "nginx", Digests: map[PinKey]string{{File: "a.yaml", Line: 3, Digest: digestA}: "sha256:abc"}})
	if !errors.Is(err, imageref.ErrInvalidDigest) || !strings.Contains(err.Error(), "a.yaml:3") {
		t.Fatalf("Set: %v, want ErrInvalidDigest naming a.yaml:3 before reading the tree", err)
	}
}

func TestRewriteRefusesEscapedPin(t *testing.T) {
	src := []byte("kind: Pod\nspec:\n  containers:\n  - image: \"nginx\\x40" + digestA + "\"\n")
	_, _, err := Rewrite("pod.yaml", src, Update{Image: "nginx", Digest: digestB})
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 4 {
		t.Fatalf("Rewrite: %v, want a *SyntaxError on line 4", err)
	}
	// An escaped pin of another image is not in the way.
	out, changes, err := Rewrite("pod.yaml", src, Update{Image: "redis", Digest: digestB})
	if err != nil || len(changes) != 0 || string(out) != string(src) {
		t.Errorf("Rewrite for another image = %q, %v, %v", out, changes, err)
	}
}

func TestRewriteChanges(t *testing.T) {
	src := "image:\n  repository: nginx\n  tag: \"1.27\"\n  digest: " + digestA + "\r\nother: {image: nginx:1.27@" + digestA + "}\r\n"
	out, changes, err := Rewrite("values.yaml", []byte(src), Update{Image: "nginx", Digest: digestB, Tag: "1.28"})
	if err != nil {
		t.Fatal(err)
	}
	wantOut := "image:\n  repository: nginx\n  tag: \"1.28\"\n  digest: " + digestB + "\r\nother: {image: nginx:1.28@" + digestB + "}\r\n"
	if diff := cmp.Diff(wantOut, string(out)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	base := Change{File: "values.yaml", Kind: KindHelm, Image: "index.docker.io/library/nginx",
		OldDigest: digestA, NewDigest: digestB, OldTag: "1.27", NewTag: "1.28"}
	c3, c4, c5 := base, base, base
	c3.Line, c3.Before, c3.After = 3, `  tag: "1.27"`, `  tag: "1.28"`
	c4.Line, c4.Before, c4.After = 4, "  digest: "+digestA, "  digest: "+digestB
	c5.Kind, c5.Line = KindManifest, 5
	c5.Before, c5.After = "other: {image: nginx:1.27@"+digestA+"}", "other: {image: nginx:1.28@"+digestB+"}"
	if diff := cmp.Diff([]Change{c3, c4, c5}, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestScanDigestForms lists the digest forms real repositories use: a
// Dockerfile ARG feeding FROM, a whole reference under any key, kustomize's
// name:tag, newTag tag@digest and newName ref@digest, a Flux
// Kustomization's images, and Bitnami-style Helm tags.
func TestScanDigestForms(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"Dockerfile": "ARG BASE=golang:1.26@" + digestA + "\nARG UNUSED=golang@" + digestA + "\nFROM ${BASE} AS build\nFROM $BASE\n",
		"task.yaml":  "spec:\n  params:\n  - name: b\n    default: nginx:1.27@" + digestA + "\n  - name: s\n    default: run nginx@" + digestA + "\n",
		"kustomization.yaml": "images:\n- name: nginx:1.27\n  digest: " + digestA + "\n- name: web\n  newTag: v1@" + digestB +
			"\n- name: p\n  newName: ghcr.io/o/p:2@" + digestC + "\n",
		"flux.yaml":   "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nspec:\n  images:\n  - name: ghcr.io/o/web\n    newTag: v3\n    digest: " + digestB + "\n",
		"values.yaml": "image:\n  registry: docker.io\n  repository: bitnami/redis\n  tag: 7.4.2-debian-12-r0@" + digestC + "\n",
	})
	got, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	nginx, golang := "index.docker.io/library/nginx", "index.docker.io/library/golang"
	want := []Pin{
		{File: "Dockerfile", Line: 1, Column: 22, Kind: KindDockerfile, Image: golang, Tag: "1.26", Digest: digestA},
		{File: "flux.yaml", Line: 7, Column: 13, Kind: KindKustomize, Image: "ghcr.io/o/web", Tag: "v3", Digest: digestB},
		{File: "kustomization.yaml", Line: 3, Column: 11, Kind: KindKustomize, Image: nginx, Tag: "1.27", Digest: digestA},
		{File: "kustomization.yaml", Line: 5, Column: 14, Kind: KindKustomize, Image: "index.docker.io/library/web", Tag: "v1", Digest: digestB},
		{File: "kustomization.yaml", Line: 7, Column: 26, Kind: KindKustomize, Image: "ghcr.io/o/p", Tag: "2", Digest: digestC},
		{File: "task.yaml", Line: 4, Column: 25, Kind: KindManifest, Image: nginx, Tag: "1.27", Digest: digestA},
		{File: "values.yaml", Line: 4, Column: 27, Kind: KindHelm, Image: "index.docker.io/bitnami/redis", Tag: "7.4.2-debian-12-r0", Digest: digestC},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
}
