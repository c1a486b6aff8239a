package pins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"
)

// A files is a tree the pins walk reads: a directory on disk (tree) or a
// read-only file system (fsTree), such as a Git snapshot.
type files interface {
	// forEach calls work for every file of a known type that o admits,
	// from several goroutines; see forEachFile.
	forEach(o walkOptions, work func(f treeFile, src []byte, stat func() (fileStat, error)) error) error
}

func (t tree) forEach(o walkOptions, work func(f treeFile, src []byte, stat func() (fileStat, error)) error) error {
	return forEachFile(t, o, work)
}

// fsTree is a read-only file system to walk. Symbolic links are never
// followed, and only regular files are read, each bounded by MaxFileSize.
type fsTree struct{ fsys fs.FS }

// File is one file's new content, as Edit computes it.
type File struct {
	Path string // slash path in the tree
	Data []byte
}

// ScanFS is Scan of a read-only file system, such as a Git snapshot's:
// every digest pin, sorted by file, line and column. Nothing is written.
func ScanFS(fsys fs.FS, opts ...Option) ([]Pin, error) {
	o := makeOptions(opts)
	var warn warnings
	pins, err := scan(fsTree{fsys}, o, &warn)
	warn.deliver(o.warn)
	return pins, err
}

// Edit computes what Set would write under fsys and writes nothing: the
// changed lines, sorted by file and line, and each changed file's new
// content, sorted by path. Its errors are Set's.
func Edit(ctx context.Context, fsys fs.FS, u Update, opts ...Option) ([]Change, []File, error) {
	up, err := prepare(u)
	if err != nil {
		return nil, nil, err
	}
	o := makeOptions(opts)
	var warn warnings
	res, err := plan(ctx, fsTree{fsys}, up, o, walkOptions{include: u.Include, warn: &warn, vendored: o.vendored}, true)
	warn.deliver(o.warn)
	if err != nil {
		return nil, nil, err
	}
	res.report(o)
	out := make([]File, len(res.done))
	for i, r := range res.done {
		out[i] = File{Path: r.rel, Data: r.out}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return res.changes(), out, nil
}

func (t fsTree) forEach(o walkOptions, work func(f treeFile, src []byte, stat func() (fileStat, error)) error) error {
	var paths []treeFile
	var errs []fileError
	err := fs.WalkDir(t.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			e := fmt.Errorf("reading directory %s: %w", p, err)
			if o.lenient {
				o.warn.add(p, e)
				return fs.SkipDir
			}
			return e
		}
		if p == "." {
			return nil
		}
		switch d.Type() {
		case fs.ModeDir:
			if skipDir(d.Name(), o.vendored, func() bool { _, err := fs.Stat(t.fsys, path.Join(path.Dir(p), "Chart.yaml")); return err == nil }) {
				return fs.SkipDir
			}
		case 0: // a regular file
			if ft := classify(d.Name()); ft != ftNone && (o.include == nil || o.include(p)) {
				paths = append(paths, treeFile{rel: p, ft: ft})
			}
		}
		return nil // symbolic links, submodules: never followed, never read
	})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan treeFile)
	for range workerCount() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				src, err := fs.ReadFile(t.fsys, f.rel)
				if err == nil && len(src) > MaxFileSize {
					err = ErrTooLarge
				}
				switch {
				case errors.Is(err, ErrTooLarge) || isTooLarge(err):
					o.warn.add(f.rel, fmt.Errorf("%s: %w", f.rel, ErrTooLarge))
					continue
				case err != nil && o.lenient:
					o.warn.add(f.rel, fmt.Errorf("reading %s: %w", f.rel, err))
					continue
				case err != nil:
					mu.Lock()
					errs = append(errs, fileError{file: f.rel, err: fmt.Errorf("reading %s: %w", f.rel, err)})
					mu.Unlock()
					continue
				}
				st := fileStat{mode: 0o644, size: int64(len(src)), uid: -1, gid: -1}
				if werr := work(f, src, func() (fileStat, error) { return st, nil }); werr != nil {
					mu.Lock()
					errs = append(errs, fileError{file: f.rel, err: werr})
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range paths {
		next <- f
	}
	close(next)
	wg.Wait()
	return sortedErrors(errs)
}

// isTooLarge reports a file system's own refusal of a large file, as an
// error with a TooLarge method that says so (a Git snapshot's): pins
// imports no Git.
func isTooLarge(err error) bool {
	var t interface{ TooLarge() bool }
	return errors.As(err, &t) && t.TooLarge()
}
