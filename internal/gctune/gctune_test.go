package gctune

import (
	"runtime/debug"
	"testing"
)

func TestPaceAndRestore(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	for _, tc := range []struct {
		name string
		pace func() func()
		want int
	}{{"Batch", Batch, 400}, {"Lean", Lean, 50}} {
		restore := tc.pace()
		if got := debug.SetGCPercent(tc.want); got != tc.want {
			t.Errorf("%s: GOGC %d, want %d", tc.name, got, tc.want)
		}
		restore()
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("%s: restored GOGC %d, want 100", tc.name, got)
		}
	}
	t.Setenv("GOGC", "200")
	restore := Batch()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with $GOGC set, Batch changed GOGC to %d", got)
	}
	restore()
}
