package pins

import (
	"bytes"
	"io/fs"
	"syscall"
	"time"
)

// withFile reads the file at p into buf (grown as needed) and calls fn with
// its content and a stat of the open file. On Linux it uses the system calls
// directly: os.File would add a poller registration and a stat per file,
// which is a fifth of the cost of scanning a tree of small files.
func withFile(p string, buf []byte, fn func(src []byte, stat func() (fileStat, error)) error) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	if cap(buf) < 64<<10 {
		buf = make([]byte, 0, 64<<10)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, fn(buf, func() (fileStat, error) {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fileStat{}, &fs.PathError{Op: "stat", Path: p, Err: err}
		}
		mode := fs.FileMode(st.Mode & 0o777)
		if st.Mode&syscall.S_ISUID != 0 {
			mode |= fs.ModeSetuid
		}
		if st.Mode&syscall.S_ISGID != 0 {
			mode |= fs.ModeSetgid
		}
		if st.Mode&syscall.S_ISVTX != 0 {
			mode |= fs.ModeSticky
		}
		return fileStat{mode: mode, size: st.Size, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}, nil
	})
}

// dirEntry is a name from a directory listing and its type.
type dirEntry struct {
	name string
	typ  fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular otherwise
}

// readDir lists a directory with getdents directly, unsorted.
func readDir(p string) ([]dirEntry, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	var out []dirEntry
	buf := make([]byte, 8<<10)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return out, &fs.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off u64, reclen u16, type u8, name.
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirEntry{name: string(name)}
			switch typ {
			case syscall.DT_DIR:
				e.typ = fs.ModeDir
			case syscall.DT_LNK:
				e.typ = fs.ModeSymlink
			case syscall.DT_REG:
			case syscall.DT_UNKNOWN:
				var st syscall.Stat_t
				if err := syscall.Lstat(p+"/"+e.name, &st); err != nil {
					return out, &fs.PathError{Op: "lstat", Path: p + "/" + e.name, Err: err}
				}
				switch st.Mode & syscall.S_IFMT {
				case syscall.S_IFDIR:
					e.typ = fs.ModeDir
				case syscall.S_IFLNK:
					e.typ = fs.ModeSymlink
				case syscall.S_IFREG:
				default:
					e.typ = fs.ModeIrregular
				}
			default:
				e.typ = fs.ModeIrregular
			}
			out = append(out, e)
		}
	}
}
