//go:build unix

// Package filelock is pinbot's one home for taking turns between
// processes on one machine: an exclusive flock on a file or directory.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// poll is how often a waiting Lock tries again.
const poll = 50 * time.Millisecond

// Lock takes an exclusive lock on path, a directory (locked itself, so it
// gains no lock file) or a file (created, mode 0600, when missing),
// waiting while another process holds it until ctx ends. The returned
// func releases it.
func Lock(ctx context.Context, path string) (func(), error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("locking %s: waiting for another pinbot to finish with it: %w", path, context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}
