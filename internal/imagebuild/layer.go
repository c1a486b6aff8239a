package imagebuild

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer.
type File struct {
	// Path is the absolute path in the image, such as "/etc/passwd".
	Path string
	// Mode holds the permission bits, fs.ModeDir for a directory and
	// fs.ModeSticky where wanted.
	Mode fs.FileMode
	// UID and GID own the entry; zero is root.
	UID, GID int
	// Data is the content of a regular file, unless Source is set.
	Data []byte
	// Source is a file on the build machine to copy the content from.
	Source string
	// Link, when set, makes the entry a symbolic link to it.
	Link string
}

// Layer returns a gzip-compressed OCI layer holding files, with the
// directories above them that files does not list (root-owned, 0755). The
// tar stream is reproducible: entries sorted by path, every modification
// time mtime (truncated to the second), numeric owners only. Sources are
// read every time the layer is read (to compute its digests and to push it)
// and must not change meanwhile.
func Layer(files []File, mtime time.Time) (v1.Layer, error) {
	entries, err := entries(files)
	if err != nil {
		return nil, err
	}
	for _, f := range entries {
		if f.Source == "" {
			continue
		}
		st, err := os.Stat(f.Source)
		if err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("layer entry %s: %s is not a regular file", f.Path, f.Source)
		}
	}
	mtime = mtime.UTC().Truncate(time.Second)
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, entries, mtime)) }()
		return pr, nil
	}
	l, err := tarball.LayerFromOpener(opener,
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, fmt.Errorf("building layer: %w", err)
	}
	return l, nil
}

// entries checks files and returns them with their missing parent
// directories, sorted by path.
func entries(files []File) ([]File, error) {
	byPath := map[string]File{}
	for _, f := range files {
		clean := path.Clean(f.Path)
		if !strings.HasPrefix(f.Path, "/") || clean != f.Path || clean == "/" {
			return nil, fmt.Errorf("layer entry %q: want a clean absolute path below /", f.Path)
		}
		if _, dup := byPath[clean]; dup {
			return nil, fmt.Errorf("layer entry %s: listed twice", clean)
		}
		if f.Mode.IsDir() && (f.Data != nil || f.Source != "" || f.Link != "") {
			return nil, fmt.Errorf("layer entry %s: a directory has no content", clean)
		}
		if f.Link != "" && (f.Data != nil || f.Source != "") {
			return nil, fmt.Errorf("layer entry %s: a symbolic link has no content", clean)
		}
		if f.Mode&^(fs.ModeDir|fs.ModeSticky|fs.ModePerm) != 0 {
			return nil, fmt.Errorf("layer entry %s: mode %s: only files and directories", clean, f.Mode)
		}
		byPath[clean] = f
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if f, ok := byPath[dir]; ok {
				if !f.Mode.IsDir() {
					return nil, fmt.Errorf("layer entry %s: %s is a file, not a directory", p, dir)
				}
				continue
			}
			byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
	out := make([]File, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// writeTar writes entries (from entries) as a tar stream to w.
func writeTar(w io.Writer, entries []File, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    int64(f.Mode.Perm()),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		if f.Mode.IsDir() {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("writing layer entry %s: %w", f.Path, err)
			}
			continue
		}
		if f.Link != "" {
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("writing layer entry %s: %w", f.Path, err)
			}
			continue
		}
		hdr.Typeflag = tar.TypeReg
		if f.Source == "" {
			hdr.Size = int64(len(f.Data))
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("writing layer entry %s: %w", f.Path, err)
			}
			if _, err := tw.Write(f.Data); err != nil {
				return fmt.Errorf("writing layer entry %s: %w", f.Path, err)
			}
			continue
		}
		if err := copyFile(tw, hdr, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing layer: %w", err)
	}
	return nil
}

// copyFile writes the entry f, whose content is the file f.Source.
func copyFile(tw *tar.Writer, hdr *tar.Header, f File) error {
	src, err := os.Open(f.Source)
	if err != nil {
		return fmt.Errorf("layer entry %s: %w", f.Path, err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("layer entry %s: %w", f.Path, err)
	}
	hdr.Size = st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing layer entry %s: %w", f.Path, err)
	}
	n, err := io.Copy(tw, src)
	if err != nil {
		return fmt.Errorf("writing layer entry %s from %s: %w", f.Path, f.Source, err)
	}
	if n != hdr.Size {
		return fmt.Errorf("writing layer entry %s: %s changed size while read", f.Path, f.Source)
	}
	return nil
}
