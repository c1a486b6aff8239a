package pins

import "testing"

func BenchmarkScanBig(b *testing.B) {
	for b.Loop() {
		if _, err := Scan("/tmp/btree"); err != nil {
			b.Fatal(err)
		}
	}
}
