package pins

import (
	"bytes"
	"io/fs"
	"syscall"
	"time"
	"unsafe"

	"pinbot.dev/pinbot/internal/confined"
)

// The tree walk makes its system calls directly, with the file relative to
// its directory's descriptor: os.File would add a poller registration and a
// stat per file, and a full path costs a lookup per component. Together
// they were half the cost of listing a tree of small files.
//
// The calls that may wait on the file system (openat, read, getdents) go
// through syscall.Syscall, which tells the scheduler they may block: on a
// slow network file system a worker then gives up its processor while it
// waits, and a long `drift --schedule` keeps running its other goroutines.
// RawSyscall spares the runtime's monitor the hand-offs, but measured with
// `go run ./hack/bench -run pins` (6 runs each, on a loaded 2-core machine)
// it saved only about 6% of the CPU time (median 118 ms against 126 ms for
// the 5,000-file tree), and both kept pins list within 3x grep -rl (median
// 2.45x raw, 2.55x Syscall) and under 60 MB. close stays raw: closing a
// file opened read-only does not wait on the server.

// rawOpenat opens name relative to the directory dirfd.
func rawOpenat(dirfd int, name string, flags int) (int, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	for {
		fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(flags), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

// rawRead reads into b; with getdents it lists a directory instead.
func rawRead(trap uintptr, fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := syscall.Syscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

func rawClose(fd int) { syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0) }

// dirHandle is an open directory.
type dirHandle struct {
	fd   int
	path string
}

func openDir(p string) (dirHandle, error) {
	fd, err := rawOpenat(_AT_FDCWD, p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC)
	if err != nil {
		return dirHandle{}, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return dirHandle{fd: fd, path: p}, nil
}

func (d dirHandle) close() { rawClose(d.fd) }

// openSub opens the directory rel below d, the walk's root, refusing a
// path through a link (one swapped in since the listing) and any path
// out of the root (see internal/confined).
func (d dirHandle) openSub(rel, abs string) (dirHandle, error) {
	fd, err := confined.OpenBeneath(d.fd, rel, syscall.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return dirHandle{}, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	return dirHandle{fd: fd, path: abs}, nil
}

const _AT_FDCWD = -100

// withFile reads the file name in d into buf (grown as needed) and calls fn
// with its content and a stat of the open file. It does not follow a
// symbolic link put in the file's place since the directory was read.
func (d dirHandle) withFile(name string, buf []byte, fn func(src []byte, stat func() (fileStat, error)) error) ([]byte, error) {
	p := d.path + "/" + name
	// O_NONBLOCK: a FIFO put in the file's place must not block the open.
	fd, err := rawOpenat(d.fd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer rawClose(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return buf, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf, &fs.PathError{Op: "open", Path: p, Err: confined.ErrNotRegular}
	}
	if cap(buf) < 64<<10 {
		buf = make([]byte, 0, 64<<10)
	}
	buf = buf[:0]
	for {
		if len(buf) > MaxFileSize {
			return buf, ErrTooLarge
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rawRead(syscall.SYS_READ, fd, buf[len(buf):min(cap(buf), MaxFileSize+1)])
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, fn(buf, func() (fileStat, error) {
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
		return fileStat{mode: mode, size: st.Size, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), uid: int(st.Uid), gid: int(st.Gid)}, nil
	})
}

// dirEntry is a name from a directory listing and its type.
type dirEntry struct {
	name string
	typ  fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular otherwise
}

// entries lists the directory with getdents directly, unsorted, appending
// to out and using buf (which it may grow) for the raw listing.
func (d dirHandle) entries(out []dirEntry, buf *[]byte) ([]dirEntry, error) {
	fd, p := d.fd, d.path
	if len(*buf) < 8<<10 {
		*buf = make([]byte, 8<<10)
	}
	for {
		n, err := rawRead(syscall.SYS_GETDENTS64, fd, *buf)
		if err != nil {
			return out, &fs.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := (*buf)[:n]; len(b) >= 19; {
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
				if err := fstatat(fd, e.name, &st); err != nil {
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

// fstatat stats name in the directory fd without following a link.
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(sysFstatat, uintptr(fd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), _AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

const _AT_SYMLINK_NOFOLLOW = 0x100
