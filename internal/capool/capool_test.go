package capool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "no PEM certificate") || !strings.Contains(err.Error(), empty) {
		t.Errorf("Load of a bundle without certificates: %v; want an error naming the file", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.pem")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}
