package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseArg(t *testing.T) {
	tests := []struct {
		arg  string
		want file
		err  bool
	}{
		{arg: "github.com/argoproj/argo-cd/v3@v3.6.1=manifests/crds/application-crd.yaml",
			want: file{module: "github.com/argoproj/argo-cd/v3", version: "v3.6.1", path: "manifests/crds/application-crd.yaml"}},
		{arg: "example.com/m@v1.0.0=./a/../b.yaml", want: file{module: "example.com/m", version: "v1.0.0", path: "b.yaml"}},
		{arg: "example.com/m=b.yaml", err: true},
		{arg: "example.com/m@v1.0.0", err: true},
		{arg: "example.com/m@v1.0.0=", err: true},
		{arg: "example.com/m@v1.0.0=/etc/passwd", err: true},
		{arg: "example.com/m@v1.0.0=../x.yaml", err: true},
		{arg: "@v1=x.yaml", err: true},
	}
	for _, tc := range tests {
		got, err := parseArg(tc.arg)
		if tc.err {
			if err == nil || !strings.Contains(err.Error(), tc.arg) {
				t.Errorf("parseArg(%q) = %+v, %v; want an error naming the argument", tc.arg, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseArg(%q): %s", tc.arg, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(file{})); diff != "" {
			t.Errorf("parseArg(%q) (-want +got):\n%s", tc.arg, diff)
		}
	}
}

func TestReadZipAndWriteFile(t *testing.T) {
	dir := t.TempDir()
	zpath := filepath.Join(dir, "v1.0.0.zip")
	f, err := os.Create(zpath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("example.com/m@v1.0.0/crds/widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("kind: CustomResourceDefinition\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := readZip(zpath, "example.com/m@v1.0.0/crds/widget.yaml")
	if err != nil || string(data) != "kind: CustomResourceDefinition\n" {
		t.Fatalf("readZip = %q, %v", data, err)
	}
	if _, err := readZip(zpath, "example.com/m@v1.0.0/crds/missing.yaml"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("readZip of a missing file = %v, want an error naming it", err)
	}

	dst := filepath.Join(dir, "out", "widget.yaml")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dst, data); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dst, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || string(got) != "second\n" {
		t.Errorf("after two writes the file holds %q, %v", got, err)
	}
	entries, err := os.ReadDir(filepath.Dir(dst))
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %d entries (%v), want the file alone: no temporary file left", len(entries), err)
	}
}
