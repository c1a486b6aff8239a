package poll

import (
	"testing"
	"time"
)

// fakeTB records a failure instead of failing.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, time.Minute, "the third ask", func() (bool, string) { n++; return n == 3, "" })
	if n != 3 {
		t.Errorf("asked %d times, want 3", n)
	}
	f := &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		Until(f, 10*time.Millisecond, "never", func() (bool, string) { return false, "still no" })
	}()
	if f.failed == "" {
		t.Error("Until did not fail after its timeout")
	}
}
