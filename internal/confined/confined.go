// Package confined reads a directory tree on disk that pinbot does not
// trust, such as a checkout of a manifest repository: as an io/fs file
// system that never leaves the tree. It is the one home of that policy.
//
//   - No symbolic link is followed, wherever it is in a path: it is
//     listed (walkers see it and skip it), never opened. A link cannot
//     reach a file outside the tree, nor another file inside it.
//   - Only directories and regular files open. A FIFO, socket or device
//     is refused without blocking.
//   - Every read is bounded by MaxFile.
//
// On Linux each open is one openat2 call relative to the tree's root with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, so the kernel enforces this
// even against a tree that changes while it is read; where openat2 is
// missing, the path is walked a component at a time with O_NOFOLLOW.
package confined

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"time"
)

// MaxFile bounds the size of a file read through FS: no manifest, chart
// or config is larger, and a huge file must not take pinbot's memory.
const MaxFile = 16 << 20

// ErrLink refuses to open a symbolic link, or a path through one.
var ErrLink = errors.New("a symbolic link: pinbot follows no link in a repository")

// ErrNotRegular refuses a FIFO, socket or device.
var ErrNotRegular = errors.New("not a regular file or directory")

// ErrTooLarge refuses a file over MaxFile. It says so through a TooLarge
// method too, which callers that import no file system ask.
var ErrTooLarge error = tooLarge{}

type tooLarge struct{}

func (tooLarge) Error() string  { return fmt.Sprintf("larger than %d MiB", MaxFile>>20) }
func (tooLarge) TooLarge() bool { return true }

// FS is a directory tree read under the rules of the package. It is safe
// for concurrent use; Close releases its root.
type FS struct {
	root *os.File // the tree's root directory, opened once
	dir  string   // for messages
}

// Open opens the tree at dir. dir itself may be reached through links
// (it is the caller's choice); nothing below it is.
func Open(dir string) (*FS, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not a directory")}
	}
	return &FS{root: f, dir: dir}, nil
}

// Close releases the tree's root.
func (c *FS) Close() error { return c.root.Close() }

// Open implements fs.FS: a directory (with ReadDir) or a regular file,
// whose reads stop with ErrTooLarge past MaxFile.
func (c *FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := c.open(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	switch {
	case fi.IsDir():
		return &dir{File: f, name: name}, nil
	case fi.Mode().IsRegular():
		return &file{f: f, info: fi, r: io.LimitReader(f, MaxFile+1)}, nil
	}
	f.Close()
	return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
}

// ReadFile reads the regular file name, bounded by MaxFile.
func (c *FS) ReadFile(name string) ([]byte, error) {
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if d, ok := f.(*dir); ok {
		return nil, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
	}
	fl := f.(*file)
	data, err := io.ReadAll(fl.r)
	if err == nil && len(data) > MaxFile {
		err = ErrTooLarge
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// ReadDir lists the directory name, sorted by name. Entries have the type
// of what is there, links included; their Info does not follow links.
func (c *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(*dir)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return d.ReadDir(-1)
}

// Lstat describes name without following it should it be a link.
func (c *FS) Lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return c.root.Stat()
	}
	parent, err := c.open(path.Dir(name))
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	defer parent.Close()
	fi, err := lstatAt(parent, path.Base(name))
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return fi, nil
}

// Stat is Lstat: FS follows no link, so a link is described as one.
func (c *FS) Stat(name string) (fs.FileInfo, error) { return c.Lstat(name) }

// file is an open regular file.
type file struct {
	f    *os.File
	info fs.FileInfo
	r    io.Reader
	n    int64
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Close() error               { return f.f.Close() }

func (f *file) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	f.n += int64(n)
	if f.n > MaxFile {
		return n, ErrTooLarge
	}
	return n, err
}

// dir is an open directory. Its entries are described relative to its
// descriptor (os.File's own would stat them by path), sorted by name.
type dir struct {
	*os.File
	name    string
	entries []fs.DirEntry
	read    bool
}

var _ fs.ReadDirFile = (*dir)(nil)

func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		names, err := d.File.Readdirnames(-1)
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, name := range names {
			fi, err := lstatAt(d.File, name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since it was listed
			}
			if err != nil {
				return nil, &fs.PathError{Op: "lstat", Path: path.Join(d.name, name), Err: err}
			}
			d.entries = append(d.entries, fs.FileInfoToDirEntry(fi))
		}
		d.read = true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

// statInfo is a FileInfo from a stat system call.
type statInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (i statInfo) Name() string       { return i.name }
func (i statInfo) Size() int64        { return i.size }
func (i statInfo) Mode() fs.FileMode  { return i.mode }
func (i statInfo) ModTime() time.Time { return i.mtime }
func (i statInfo) IsDir() bool        { return i.mode.IsDir() }
func (i statInfo) Sys() any           { return nil }
