// Package filetree writes the file trees tests start from.
package filetree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes files (slash paths to contents) under a new temporary
// directory of t's and returns the directory.
func Write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	WriteIn(t, dir, files)
	return dir
}

// WriteIn writes files (slash paths to contents) under dir. A body of
// "symlink:TARGET" makes a symbolic link to TARGET instead.
func WriteIn(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if target, ok := strings.CutPrefix(body, "symlink:"); ok {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		WriteFile(t, p, body)
	}
}

// WriteFile writes content to the file at path, making its directory.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
