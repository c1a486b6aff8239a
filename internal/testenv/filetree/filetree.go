// Package filetree writes the file trees tests start from.
package filetree

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes files (slash paths to contents) under a new temporary
// directory of t's and returns the directory.
func Write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
