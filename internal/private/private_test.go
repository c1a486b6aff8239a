//go:build unix

package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	base := t.TempDir()
	ok := filepath.Join(base, "a", "b")
	if err := Dir(ok); err != nil {
		t.Fatalf("Dir(new): %s", err)
	}
	if fi, _ := os.Stat(ok); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %s, want 0700", fi.Mode().Perm())
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := Dir(open); err == nil || !strings.Contains(err.Error(), "may be written by others") {
		t.Errorf("Dir(world-writable) = %v, want a refusal", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	if err := Dir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Dir(link) = %v, want a refusal", err)
	}
	if err := os.Chown(ok, 12345, 12345); err == nil { // as root: give it away
		if err := Dir(ok); err == nil || !strings.Contains(err.Error(), "belongs to user 12345") {
			t.Errorf("Dir(someone else's) = %v, want a refusal", err)
		}
	}
}
