package confined

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 was found missing (an old kernel, or a
// sandbox that forbids it): the component walk is used from then on.
var noOpenat2 atomic.Bool

// open opens name (a valid fs path) beneath the root, refusing links on
// the way, and never blocking on a FIFO.
func (c *FS) open(name string) (*os.File, error) {
	fd, err := OpenBeneath(int(c.root.Fd()), name, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenBeneath opens the slash path name below the directory dirfd with
// flags (O_CLOEXEC and O_NONBLOCK are added), refusing a path through or
// to a symbolic link (ErrLink) and any path that leaves the directory. It
// is the package's rule for callers that walk a tree by descriptors.
func OpenBeneath(dirfd int, name string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NONBLOCK
	if name == "." || name == "" {
		return retry(func() (int, error) { return unix.Openat(dirfd, ".", flags, 0) })
	}
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := retry(func() (int, error) { return unix.Openat2(dirfd, name, &how) })
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && !exists(dirfd, name):
			noOpenat2.Store(true)
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV):
			return -1, ErrLink
		default:
			return -1, err
		}
	}
	return walk(dirfd, name, flags)
}

// exists tells a sandbox's EPERM for openat2 from a file's: the file is
// there to stat.
func exists(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// walk opens name one component at a time, each with O_NOFOLLOW.
func walk(dirfd int, name string, flags int) (int, error) {
	fd := dirfd
	closeFd := func() {
		if fd != dirfd {
			unix.Close(fd)
		}
	}
	for {
		comp, rest, more := cut(name)
		if comp == ".." {
			closeFd()
			return -1, fs.ErrInvalid
		}
		f := flags | unix.O_NOFOLLOW
		if more {
			f = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
		}
		next, err := retry(func() (int, error) { return unix.Openat(fd, comp, f, 0) })
		if err != nil && (errors.Is(err, unix.ELOOP) || more && errors.Is(err, unix.ENOTDIR) && isLink(fd, comp)) {
			err = ErrLink
		}
		closeFd()
		if err != nil {
			return -1, err
		}
		if !more {
			return next, nil
		}
		fd, name = next, rest
	}
}

func isLink(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

func cut(name string) (string, string, bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}

func retry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// lstatAt describes name in the open directory parent without following
// it.
func lstatAt(parent *os.File, name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(parent.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFREG:
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	default:
		mode |= fs.ModeIrregular
	}
	return statInfo{name: name, size: st.Size, mode: mode, mtime: time.Unix(st.Mtim.Unix())}, nil
}
