//go:build unix

// Package private is pinbot's one home for the state it keeps on a
// machine (clone caches, journals): directories of its own, which no
// other user may have prepared, swapped or may write to.
package private

import (
	"fmt"
	"os"
	"syscall"
)

// Dir makes dir (and its missing parents) with mode 0700 and
// checks that it is a directory owned by this user that no one else may
// write to, and not a symbolic link: a directory someone else prepared
// could be swapped under pinbot, or read.
func Dir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: pinbot keeps its state in a directory of its own", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %s): pinbot keeps its state in a directory of its own", dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to user %d, not to this user (%d): pinbot keeps its state in a directory of its own", dir, st.Uid, os.Geteuid())
	}
	return nil
}
