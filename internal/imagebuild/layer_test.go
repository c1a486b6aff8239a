package imagebuild

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// header is what a test compares of a tar entry.
type header struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	ModTime  time.Time
	Content  string
}

// readLayer returns the entries of l's uncompressed tar stream.
func readLayer(t *testing.T, l v1.Layer) []header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner names %q:%q, want numeric owners only", h.Name, h.Uname, h.Gname)
		}
		out = append(out, header{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime.UTC(), Content: string(b)})
	}
}

func TestLayer(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(src, []byte("#!binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1700000000, 0).UTC()
	got := readLayer(t, mustLayer(t, []File{
		{Path: "/usr/local/bin/pinbot", Mode: 0o755, Source: src},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0::/:/x\n")},
		{Path: "/home/nonroot", Mode: fs.ModeDir | 0o700, UID: 65532, GID: 65532},
	}, mtime.Add(999*time.Millisecond)))
	dir := func(name string) header {
		return header{Name: name, Type: tar.TypeDir, Mode: 0o755, ModTime: mtime}
	}
	want := []header{
		dir("etc/"),
		{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o644, ModTime: mtime, Content: "root:x:0:0::/:/x\n"},
		dir("home/"),
		{Name: "home/nonroot/", Type: tar.TypeDir, Mode: 0o700, UID: 65532, GID: 65532, ModTime: mtime},
		{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777, ModTime: mtime},
		dir("usr/"),
		dir("usr/local/"),
		dir("usr/local/bin/"),
		{Name: "usr/local/bin/pinbot", Type: tar.TypeReg, Mode: 0o755, ModTime: mtime, Content: "#!binary"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
}

func TestLayerIsReproducible(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("same content"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// b differs from a in everything but the content: mode on disk and
	// modification time.
	if err := os.Chmod(b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(b, time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1, 0)
	files := func(src string) []File {
		return []File{{Path: "/x/y", Mode: 0o644, Source: src}, {Path: "/a", Mode: 0o644, Data: []byte("a")}}
	}
	reversed := func(src string) []File {
		f := files(src)
		return []File{f[1], f[0]}
	}
	first := digest(t, mustLayer(t, files(a), mtime))
	for name, l := range map[string]v1.Layer{
		"same files":        mustLayer(t, files(a), mtime),
		"other file":        mustLayer(t, files(b), mtime),
		"other order":       mustLayer(t, reversed(a), mtime),
		"same second, +0.5": mustLayer(t, files(a), mtime.Add(500*time.Millisecond)),
	} {
		if got := digest(t, l); got != first {
			t.Errorf("%s: digest %s, want %s", name, got, first)
		}
	}
	if got := digest(t, mustLayer(t, files(a), mtime.Add(time.Second))); got == first {
		t.Errorf("another mtime gives the same digest %s", got)
	}
}

func TestLayerErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name  string
		files []File
		want  string
	}{
		{"relative path", []File{{Path: "etc/passwd", Mode: 0o644}}, `layer entry "etc/passwd": want a clean absolute path`},
		{"unclean path", []File{{Path: "/etc/../passwd", Mode: 0o644}}, `want a clean absolute path`},
		{"root", []File{{Path: "/", Mode: fs.ModeDir | 0o755}}, `want a clean absolute path below /`},
		{"listed twice", []File{{Path: "/a", Mode: 0o644}, {Path: "/a", Mode: 0o600}}, "layer entry /a: listed twice"},
		{"file as directory", []File{{Path: "/a", Mode: 0o644}, {Path: "/a/b", Mode: 0o644}}, "layer entry /a/b: /a is a file"},
		{"directory content", []File{{Path: "/d", Mode: fs.ModeDir | 0o755, Data: []byte("x")}}, "a directory has no content"},
		{"symlink", []File{{Path: "/l", Mode: fs.ModeSymlink | 0o777}}, "only files and directories"},
		{"missing source", []File{{Path: "/bin/x", Mode: 0o755, Source: missing}}, "layer entry /bin/x: stat " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Layer(tc.files, time.Unix(0, 0))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Layer: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func mustLayer(t *testing.T, files []File, mtime time.Time) v1.Layer {
	t.Helper()
	l, err := Layer(files, mtime)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
