package pins

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkSitesMem(b *testing.B) {
	var srcs [][]byte
	var names []string
	filepath.WalkDir("/tmp/btree", func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return nil
		}
		bb, _ := os.ReadFile(p)
		srcs = append(srcs, bb)
		names = append(names, p)
		return nil
	})
	a := getArena()
	b.ResetTimer()
	for b.Loop() {
		for i, s := range srcs {
			fileSites(names[i], classify(names[i]), s, a)
			a.reset()
		}
	}
}
