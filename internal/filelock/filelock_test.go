//go:build unix

package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestLockTakesTurns(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{dir, filepath.Join(dir, "cache.lock")} {
		unlock, err := Lock(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err = Lock(ctx, path) // flock is per open file: a second open waits
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a second Lock of the held %s = %v, want it to wait until its context ends", path, err)
		}
		unlock()
		unlock2, err := Lock(context.Background(), path)
		if err != nil {
			t.Fatalf("Lock after the release: %s", err)
		}
		unlock2()
	}
}
