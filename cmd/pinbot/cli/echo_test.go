package cli

import (
	"strings"
	"testing"
)

// TestLongValuesAreClipped: a 6 KB reference given to resolve, promote's
// --image or pins set is echoed clipped, saying how long it was, never
// whole.
func TestLongValuesAreClipped(t *testing.T) {
	long := "r.example/app:" + strings.Repeat("a", 6000)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"resolve", long},
		{"resolve", "r.example/app@sha256:" + strings.Repeat("a", 6000)},
		{"promote", "--forge-url", "http://127.0.0.1:1", "--repo", "o/r", "--image", long, "--dry-run"},
		{"pins", "set", long + "@sha256:" + strings.Repeat("a", 64), "--dir", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := run(t, args...)
			if code == 0 {
				t.Fatalf("exit 0 for %s", args[0])
			}
			if len(stderr) > 1500 || !strings.Contains(stderr, "bytes)") {
				t.Errorf("stderr of %d bytes, want a clipped value saying its length: %.300s", len(stderr), stderr)
			}
		})
	}
}
