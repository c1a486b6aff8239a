//go:build !linux

package pins

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"pinbot.dev/pinbot/internal/confined"
)

// dirHandle is a directory being walked.
type dirHandle struct{ path string }

func openDir(p string) (dirHandle, error) { return dirHandle{path: p}, nil }

func (d dirHandle) close() {}

// openSub checks that the directory rel below d, the walk's root, is no
// link (see internal/confined).
func (d dirHandle) openSub(rel, abs string) (dirHandle, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return dirHandle{}, err
	}
	if !fi.IsDir() {
		return dirHandle{}, &fs.PathError{Op: "open", Path: abs, Err: confined.ErrLink}
	}
	return dirHandle{path: abs}, nil
}

// withFile reads the file name in d into buf (grown as needed) and calls fn
// with its content and a stat of the open file.
func (d dirHandle) withFile(name string, buf []byte, fn func(src []byte, stat func() (fileStat, error)) error) ([]byte, error) {
	p := filepath.Join(d.path, name)
	if fi, err := os.Lstat(p); err != nil {
		return buf, err
	} else if !fi.Mode().IsRegular() {
		return buf, &fs.PathError{Op: "open", Path: p, Err: errors.New("no longer a regular file")}
	}
	f, err := os.Open(p)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) > MaxFileSize {
			return buf, ErrTooLarge
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), MaxFileSize+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, fn(buf, func() (fileStat, error) {
		fi, err := f.Stat()
		if err != nil {
			return fileStat{}, err
		}
		return fileStat{mode: fi.Mode() & modeBits, size: fi.Size(), mtime: fi.ModTime(), uid: -1, gid: -1}, nil
	})
}

// dirEntry is a name from a directory listing and its type.
type dirEntry struct {
	name string
	typ  fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular otherwise
}

// entries lists the directory, unsorted, appending to out.
func (d dirHandle) entries(out []dirEntry, _ *[]byte) ([]dirEntry, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	for _, e := range entries {
		t := e.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			t = fs.ModeSymlink
		case t.IsDir():
			t = fs.ModeDir
		case t.IsRegular():
			t = 0
		default:
			t = fs.ModeIrregular
		}
		out = append(out, dirEntry{name: e.Name(), typ: t})
	}
	return out, err
}
