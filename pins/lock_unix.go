//go:build unix

package pins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockTree takes an exclusive lock on the directory root (flock on the
// directory itself, so the tree gains no lock file), waiting while another
// process holds it until ctx ends. The returned func releases it.
func lockTree(ctx context.Context, root string) (func(), error) {
	f, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", root, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", root, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("locking %s: waiting for another pinbot to finish with it: %w", root, context.Cause(ctx))
		case <-time.After(lockWait):
		}
	}
}
