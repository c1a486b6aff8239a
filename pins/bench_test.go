package pins_test

import (
	"strings"
	"testing"

	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/pins/pinstest"
)

// benchTree writes a tenth of the make-bench tree: 500 files, 2,000 pins,
// 200 repositories, one of them pinned in 100 files.
func benchTree(b *testing.B) (string, pinstest.Stats) {
	b.Helper()
	dir := b.TempDir()
	st, err := pinstest.WriteTree(dir, pinstest.Tree{Files: 500, Pins: 2000, Repos: 200, SetFiles: 100, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return dir, st
}

func BenchmarkScan(b *testing.B) {
	dir, st := benchTree(b)
	b.SetBytes(st.Bytes)
	for b.Loop() {
		found, err := pins.Scan(dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(found) != st.Pins {
			b.Fatalf("Scan found %d pins, want %d", len(found), st.Pins)
		}
	}
}

func BenchmarkSet(b *testing.B) {
	dir, st := benchTree(b)
	digests := []string{"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("b", 64)}
	i := 0
	for b.Loop() {
		changes, err := pins.Set(dir, pins.Update{Image: st.Target, Digest: digests[i%2]})
		if err != nil {
			b.Fatal(err)
		}
		if len(changes) != st.TargetPins {
			b.Fatalf("Set changed %d pins, want %d", len(changes), st.TargetPins)
		}
		i++
	}
}
