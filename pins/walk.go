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

func (w *warnings) deliver(fn func(string, error)) {
	if fn == nil {
		return
	}
	sort.SliceStable(w.list, func(i, j int) bool { return w.list[i].file < w.list[j].file })
	for _, e := range w.list {
		fn(e.file, e.err)
	}
}

// workerCount is how many files are read and parsed at once: one per
// processor, since reading from the page cache does not block for long.
func workerCount() int { return runtime.GOMAXPROCS(0) }

// forEachFile walks dir and calls work for every file of a known type that
// include (if set) admits, from several goroutines. src is only valid
// during the call; stat describes the file as read. Errors from work are
// collected, not fatal to the walk; they come back joined in file order.
//
// The goroutines share the walk too: each takes a directory, reads it,
// queues its subdirectories and processes its files itself, so no file is
// handed from one goroutine to another.
func forEachFile(dir string, include func(string) bool, work func(f treeFile, src []byte, stat func() (fileStat, error)) error) error {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return fmt.Errorf("reading directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return fmt.Errorf("reading directory %s: %w", dir, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("reading directory %s: not a directory", dir)
	}

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
				dh, err := openDir(d.abs)
				if err == nil {
					entries, err = dh.entries(entries, &dirBuf)
				}
				if err != nil {
					fail(d.rel, fmt.Errorf("reading directory %s: %w", path.Join(dir, d.rel), err))
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
						if abs := d.abs + string(filepath.Separator) + name; !skipDir(abs, name) {
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
						if err != nil {
							fail(rel, fmt.Errorf("reading %s: %w", rel, err))
						} else if werr != nil {
							fail(rel, werr)
						}
					}
				}
				if dh != (dirHandle{}) {
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

// skipDir reports directories whose files are not manifests: .git, and the
// templates directory of a Helm chart.
func skipDir(p, name string) bool {
	switch name {
	case ".git":
		return true
	case "templates":
		_, err := os.Stat(filepath.Join(filepath.Dir(p), "Chart.yaml"))
		return err == nil
	}
	return false
}

// fileStat is what Set checks to find a file changed while it worked.
type fileStat struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
}

// modeBits are the mode bits Set preserves.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
