//go:build !unix

package private

import (
	"fmt"
	"os"
)

// Dir makes dir with mode 0700. Where ownership cannot be asked, it
// checks only that dir is a directory and not a link.
func Dir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}
