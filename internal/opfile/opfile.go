// Package opfile reads the files pinbot's operator gives it (serve's
// config, token files, keys): bounded, a regular file only, and never
// blocking. Symbolic links are followed, since Kubernetes mounts
// ConfigMaps and Secrets through them, but what they reach must be a
// regular file: a link to /dev/zero or a FIFO is refused at once, not read
// until memory or patience runs out.
package opfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular refuses a FIFO, socket, device or directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge refuses a file over the caller's bound.
var ErrTooLarge = errors.New("larger than pinbot reads")

// Read reads file, at most max bytes of it.
func Read(file string, max int64) ([]byte, error) {
	// O_NONBLOCK: a FIFO must not block the open (and with it a SIGTERM)
	// until someone writes to it.
	fh, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", file, ErrNotRegular, fi.Mode().Type())
	}
	raw, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("%s: %w (%d bytes)", file, ErrTooLarge, max)
	}
	return raw, nil
}
