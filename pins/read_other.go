//go:build !linux

package pins

import (
	"io"
	"io/fs"
	"os"
)

// withFile reads the file at p into buf (grown as needed) and calls fn with
// its content and a stat of the open file.
func withFile(p string, buf []byte, fn func(src []byte, stat func() (fileStat, error)) error) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
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
		return fileStat{mode: fi.Mode() & modeBits, size: fi.Size(), mtime: fi.ModTime()}, nil
	})
}

// dirEntry is a name from a directory listing and its type.
type dirEntry struct {
	name string
	typ  fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular otherwise
}

// readDir lists a directory, unsorted.
func readDir(p string) ([]dirEntry, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	out := make([]dirEntry, 0, len(entries))
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
