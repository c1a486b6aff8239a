//go:build !linux

package confined

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// open opens name beneath the root a component at a time: each is
// checked not to be a link before it is opened. Between the check and
// the open a tree changed by someone else could still swap one in; Linux
// closes that gap with openat2.
func (c *FS) open(name string) (*os.File, error) {
	p := c.root.Name()
	if name != "." {
		parts := strings.Split(name, "/")
		for i := range parts {
			fi, err := os.Lstat(path.Join(append([]string{p}, parts[:i+1]...)...))
			if err != nil {
				return nil, err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return nil, ErrLink
			}
			if i < len(parts)-1 && !fi.IsDir() {
				return nil, syscall.ENOTDIR
			}
			if i == len(parts)-1 && !fi.IsDir() && !fi.Mode().IsRegular() {
				return nil, ErrNotRegular
			}
		}
		p = path.Join(p, name)
	}
	return os.Open(p)
}

func lstatAt(parent *os.File, name string) (fs.FileInfo, error) {
	return os.Lstat(path.Join(parent.Name(), name))
}
