package confined

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// hostileTree is a tree with links inside and out, a FIFO, and a file
// over the cap, next to plain files; outside is a secret beside it.
func hostileTree(t *testing.T) (root, secret string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "tree")
	secret = filepath.Join(base, "secret")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(secret, []byte("token=hunter2"), 0o600))
	must(os.MkdirAll(filepath.Join(root, "dir", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a.yaml"), []byte("a: 1\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "dir", "sub", "b.yaml"), []byte("b: 2\n"), 0o644))
	must(os.Symlink(secret, filepath.Join(root, "abs-link.yaml")))
	must(os.Symlink("../secret", filepath.Join(root, "rel-link.yaml")))
	must(os.Symlink("a.yaml", filepath.Join(root, "inside-link.yaml")))
	must(os.Symlink(base, filepath.Join(root, "dir-link")))
	must(os.Symlink("dir", filepath.Join(root, "inside-dir-link")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644))
	big, err := os.Create(filepath.Join(root, "big.yaml"))
	must(err)
	must(big.Truncate(MaxFile + 1))
	must(big.Close())
	return root, secret
}

func TestFS(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "component walk"
		}
		t.Run(name, func(t *testing.T) {
			if fallback {
				noOpenat2.Store(true)
				t.Cleanup(func() { noOpenat2.Store(false) })
			}
			root, _ := hostileTree(t)
			c, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if b, err := c.ReadFile("dir/sub/b.yaml"); err != nil || string(b) != "b: 2\n" {
				t.Errorf("ReadFile(dir/sub/b.yaml) = %q, %v", b, err)
			}
			for _, name := range []string{"abs-link.yaml", "rel-link.yaml", "inside-link.yaml", "dir-link/secret", "inside-dir-link/sub/b.yaml"} {
				if b, err := c.ReadFile(name); !errors.Is(err, ErrLink) {
					t.Errorf("ReadFile(%s) = %q, %v; want ErrLink", name, b, err)
				}
			}
			done := make(chan error, 1)
			go func() { _, err := c.ReadFile("fifo.yaml"); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("ReadFile(fifo.yaml) = %v, want ErrNotRegular", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("reading a FIFO blocked")
			}
			if _, err := c.ReadFile("big.yaml"); !errors.Is(err, ErrTooLarge) {
				t.Errorf("ReadFile(big.yaml) = %v, want ErrTooLarge", err)
			}
			for _, name := range []string{"../secret", "/etc/passwd", "dir/../../secret"} {
				if _, err := c.Open(name); !errors.Is(err, fs.ErrInvalid) {
					t.Errorf("Open(%s) = %v, want fs.ErrInvalid", name, err)
				}
			}
			fi, err := c.Lstat("dir-link")
			if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("Lstat(dir-link) = %v, %v; want a link", fi, err)
			}
			// A walk lists the links and the FIFO, and enters no link.
			var walked []string
			err = fs.WalkDir(c, ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				walked = append(walked, p+":"+d.Type().String())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := ".:d---------,a.yaml:----------,abs-link.yaml:L---------,big.yaml:----------,dir:d---------,dir/sub:d---------,dir/sub/b.yaml:----------,dir-link:L---------,fifo.yaml:p---------,inside-dir-link:L---------,inside-link.yaml:L---------,rel-link.yaml:L---------"
			if got := strings.Join(walked, ","); got != want {
				t.Errorf("walk =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestFSConformance runs the standard library's file system checks on a
// plain tree.
func TestFSConformance(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "x", "y"), 0o755)
	os.WriteFile(filepath.Join(root, "x", "y", "z.yaml"), []byte("z"), 0o644)
	os.WriteFile(filepath.Join(root, "top"), []byte("t"), 0o644)
	c, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := fstest.TestFS(c, "x/y/z.yaml", "top"); err != nil {
		t.Fatal(err)
	}
}
