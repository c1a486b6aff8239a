package opfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(ok, []byte("apps: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As Kubernetes mounts a ConfigMap key: a link to a link to the file.
	if err := os.Mkdir(filepath.Join(dir, "..data"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Rename(ok, filepath.Join(dir, "..data", "config.yaml"))
	if err := os.Symlink("..data/config.yaml", ok); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(ok, 1024); err != nil || string(b) != "apps: []\n" {
		t.Errorf("Read(a ConfigMap-style link) = %q, %v", b, err)
	}
	for name, want := range map[string]error{zero: ErrNotRegular, fifo: ErrNotRegular, big: ErrTooLarge, dir: ErrNotRegular} {
		done := make(chan error, 1)
		go func() { _, err := Read(name, 1024); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Errorf("Read(%s) = %v, want %v", name, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", name)
		}
	}
}
