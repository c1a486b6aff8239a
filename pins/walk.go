package pins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"
)

// treeFile is a file the walk hands to a worker.
type treeFile struct {
	rel string // slash path relative to the root
	dir string // absolute path of its directory
	ft  fileType
}

func (f treeFile) abs() string { return f.dir + string(filepath.Separator) + path.Base(f.rel) }

// fileError is an error about one file, kept for sorting.
type fileError struct {
	file string
	err  error
}

// sortedErrors joins errors in file order, so a run reports the same first
// error however its workers were scheduled.
func sortedErrors(errs []fileError) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].file < errs[j].file })
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e.err
	}
	if len(all) == 1 {
		return all[0]
	}
	return errors.Join(all...)
}

// warnings collects warnings from workers and delivers them in file order
// from the calling goroutine.
type warnings struct {
	mu   sync.Mutex
	list []fileError
}

func (w *warnings) add(file string, err error) {
	w.mu.Lock()
	w.list = append(w.list, fileError{file: file, err: err})
	w.mu.Unlock()
}

// deliver calls fn for each warning in file order, once per distinct
// message: two pins on one line can raise the same warning twice.
func (w *warnings) deliver(fn func(string, error)) {
	if fn == nil {
		return
	}
	sort.SliceStable(w.list, func(i, j int) bool { return w.list[i].file < w.list[j].file })
	seen := map[string]bool{}
	for _, e := range w.list {
		key := e.file + "\x00" + e.err.Error()
		if seen[key] {
			continue
		}
		seen[key] = true
		fn(e.file, e.err)
	}
}

// workerCount is how many files are read and parsed at once: one per
// processor, since reading from the page cache does not block for long.
func workerCount() int { return runtime.GOMAXPROCS(0) }

// MaxFileSize is the largest file pins reads. A larger file is skipped
// with a warning (see WithWarnings) without being read whole: parsing a
// 200 MB YAML file took gigabytes, and no manifest is that large.
const MaxFileSize = 10 << 20

// ErrTooLarge reports a file above MaxFileSize, which was skipped.
var ErrTooLarge = fmt.Errorf("larger than %d MiB: skipped", MaxFileSize>>20)

// vendoredDirs are directories of third-party code, skipped unless
// WithVendored is given: their manifests are not the repository's own.
var vendoredDirs = map[string]bool{"node_modules": true, "vendor": true}

// tree is a directory to walk: dir as the caller named it (for messages)
// and root, its absolute path with symbolic links resolved.
type tree struct{ dir, root string }

// openTree resolves dir. A dir that is itself a symbolic link is refused,
// as pins follows no link: a link to / would walk the whole system. So is
// the file system's root.
func openTree(dir string) (tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return tree{}, fmt.Errorf("reading directory %s: %w", dir, err)
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return tree{}, fmt.Errorf("reading directory %s: it is a symbolic link (to %s); pins follows no link: name the directory itself", dir, target)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return tree{}, fmt.Errorf("reading directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return tree{}, fmt.Errorf("reading directory %s: %w", dir, err)
	} else if !fi.IsDir() {
		return tree{}, fmt.Errorf("reading directory %s: not a directory", dir)
	}
	if filepath.Dir(root) == root {
		return tree{}, fmt.Errorf("reading directory %s: refusing to walk the whole file system (%s)", dir, root)
	}
	return tree{dir: dir, root: root}, nil
}

// walkOptions says what a walk visits and how it reports trouble.
type walkOptions struct {
	include  func(string) bool // files to read; nil for all
	warn     *warnings         // where skipped files are reported
	lenient  bool              // an unreadable file is a warning, not an error
	vendored bool              // walk node_modules and vendor too
}

// forEachFile walks t and calls work for every file of a known type that
// o.include (if set) admits, from several goroutines. src is only valid
// during the call; stat describes the file as read. Errors from work are
// collected, not fatal to the walk; they come back joined in file order.
// A file above MaxFileSize is a warning.
//
// The goroutines share the walk too: each takes a directory, reads it,
// queues its subdirectories and processes its files itself, so no file is
// handed from one goroutine to another.
func forEachFile(t tree, o walkOptions, work func(f treeFile, src []byte, stat func() (fileStat, error)) error) error {
	dir, root, include := t.dir, t.root, o.include

	type queued struct{ abs, rel string }
	var (
		mu      sync.Mutex
		more    = sync.NewCond(&mu)
		pending = []queued{{abs: root}}
		busy    int // goroutines reading a directory
		errs    []fileError
		wg      sync.WaitGroup
	)
	fail := func(file string, err error) {
		mu.Lock()
		errs = append(errs, fileError{file: file, err: err})
		mu.Unlock()
	}
	// next returns the next directory to read, or false when the walk is
	// over: nothing queued and nobody left to queue more.
	next := func() (queued, bool) {
		mu.Lock()
		defer mu.Unlock()
		for len(pending) == 0 && busy > 0 {
			more.Wait()
		}
		if len(pending) == 0 {
			more.Broadcast()
			return queued{}, false
		}
		d := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		busy++
		return d, true
	}
	top, err := openDir(root)
	if err != nil {
		return fmt.Errorf("reading directory %s: %w", dir, err)
	}
	defer top.close()
	for range workerCount() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf, dirBuf []byte
			var entries []dirEntry
			for {
				d, ok := next()
				if !ok {
					return
				}
				entries = entries[:0]
				dh, err := top, error(nil)
				if d.rel != "" {
					dh, err = top.openSub(d.rel, d.abs)
				}
				if err == nil {
					entries, err = dh.entries(entries, &dirBuf)
				}
				if err != nil {
					err = fmt.Errorf("reading directory %s: %w", path.Join(dir, d.rel), err)
					if o.lenient {
						o.warn.add(d.rel, err)
					} else {
						fail(d.rel, err)
					}
				}
				var subdirs []queued
				for _, e := range entries {
					name := e.name
					rel := name
					if d.rel != "" {
						rel = d.rel + "/" + name
					}
					switch e.typ {
					case fs.ModeSymlink:
						// Never followed; see the package documentation.
					case fs.ModeDir:
						abs := d.abs + string(filepath.Separator) + name
						if !skipDir(name, o.vendored, func() bool { return exists(filepath.Join(d.abs, "Chart.yaml")) }) {
							subdirs = append(subdirs, queued{abs: abs, rel: rel})
						}
					case 0: // a regular file
						ft := classify(name)
						if ft == ftNone || include != nil && !include(rel) {
							continue
						}
						f := treeFile{rel: rel, dir: d.abs, ft: ft}
						var werr error
						buf, err = dh.withFile(name, buf, func(src []byte, stat func() (fileStat, error)) error {
							werr = work(f, src, stat)
							return nil
						})
						switch {
						case errors.Is(err, ErrTooLarge):
							o.warn.add(rel, fmt.Errorf("%s: %w", rel, ErrTooLarge))
						case err != nil && o.lenient:
							o.warn.add(rel, fmt.Errorf("reading %s: %w", rel, err))
						case err != nil:
							fail(rel, fmt.Errorf("reading %s: %w", rel, err))
						case werr != nil:
							fail(rel, werr)
						}
					}
				}
				if dh != (dirHandle{}) && dh != top {
					dh.close()
				}
				mu.Lock()
				pending = append(pending, subdirs...)
				busy--
				if busy == 0 && len(pending) == 0 {
					more.Broadcast() // the walk is over
				} else {
					for range subdirs {
						more.Signal()
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sortedErrors(errs)
}

// skipDir reports directories whose files are not manifests: .git, the
// templates directory of a Helm chart (beside its parent's Chart.yaml,
// which chartBeside looks for), and (unless vendored) node_modules and
// vendor.
func skipDir(name string, vendored bool, chartBeside func() bool) bool {
	if !vendored && vendoredDirs[name] {
		return true
	}
	switch name {
	case ".git":
		return true
	case "templates":
		return chartBeside()
	}
	return false
}

// fileStat is what Set checks to find a file changed while it worked, and
// what it keeps: mode and owner.
type fileStat struct {
	mode     fs.FileMode
	size     int64
	mtime    time.Time
	uid, gid int // -1 where the system does not say
}

// modeBits are the mode bits Set preserves.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
