package memlimit

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// --memory-limit sets the runtime's soft limit: a size as given, none as
// none, and auto after $GOMEMLIMIT.
func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	ctx := context.Background()

	got, err := Set(ctx, "96Mi")
	if err != nil || got != 96<<20 || debug.SetMemoryLimit(-1) != 96<<20 {
		t.Errorf("96Mi: set %d, %v; the runtime has %d; want %d", got, err, debug.SetMemoryLimit(-1), 96<<20)
	}
	if got, err = Set(ctx, "none"); err != nil || got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("none: set %d, %v; the runtime has %d; want no limit", got, err, debug.SetMemoryLimit(-1))
	}
	t.Setenv("GOMEMLIMIT", "200MiB")
	debug.SetMemoryLimit(200 << 20) // as the runtime does at start
	if got, err = Set(ctx, "auto"); err != nil || got != 200<<20 {
		t.Errorf("auto under $GOMEMLIMIT: %d, %v; want $GOMEMLIMIT's %d kept", got, err, 200<<20)
	}
	for _, bad := range []string{"lots", "0", "-1Gi", "+5Mi"} {
		if _, err := Set(ctx, bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestSoftLimit(t *testing.T) {
	for _, tc := range []struct {
		container, reserve uint64
		want               int64
	}{
		{256 << 20, 64 << 20, 192 << 20},
		{160 << 20, 64 << 20, 96 << 20},
		{100 << 20, 64 << 20, 50 << 20}, // half, not 36Mi
		{512 << 20, 110 << 20, 402 << 20},
		{1 << 40, 64 << 20, 1<<40 - 64<<20},
		{math.MaxUint64, 64 << 20, math.MaxInt64},
	} {
		if got := softLimit(tc.container, tc.reserve); got != tc.want {
			t.Errorf("softLimit(%d, %d) = %d, want %d", tc.container, tc.reserve, got, tc.want)
		}
	}
}

// The reserve is the executable's size, at least memoryReserve: the test
// binary is larger than that.
func TestReserveIsTheExecutable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reserve(""), max(memoryReserve, uint64(fi.Size())); got != want {
		t.Errorf("reserve() = %d, want %d (the executable %s is %d bytes)", got, want, exe, fi.Size())
	}
	if got, want := Auto(1<<40, exe), int64(1<<40-max(memoryReserve, uint64(fi.Size()))); got != want {
		t.Errorf("Auto(1Ti, %s) = %d, want %d", exe, got, want)
	}
}
