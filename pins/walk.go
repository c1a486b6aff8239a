package pins

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
)

// treeFile is a file the walk hands to a worker.
type treeFile struct {
	rel string // slash path relative to the root
	abs string
	ft  fileType
}

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

// workerCount is how many files are read and parsed at once: reading is
// mostly system calls, so one more than the processors keeps them busy.
func workerCount() int { return runtime.GOMAXPROCS(0) + 1 }

// forEachFile walks dir and calls work for every file of a known type that
// include (if set) admits, from several goroutines. src is only valid
// during the call. Errors from work are collected, not fatal to the walk;
// they come back joined in file order.
func forEachFile(dir string, include func(string) bool, work func(f treeFile, src []byte, fi fs.FileInfo) error) error {
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

	files := make(chan treeFile, 256)
	var (
		mu   sync.Mutex
		errs []fileError
		wg   sync.WaitGroup
	)
	fail := func(file string, err error) {
		mu.Lock()
		errs = append(errs, fileError{file: file, err: err})
		mu.Unlock()
	}
	for range workerCount() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for f := range files {
				src, fi, err := readFile(f.abs, buf)
				if err != nil {
					fail(f.rel, fmt.Errorf("reading %s: %w", f.rel, err))
					continue
				}
				buf = src[:0]
				if err := work(f, src, fi); err != nil {
					fail(f.rel, err)
				}
			}
		}()
	}

	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // never followed; see the package documentation
		}
		if d.IsDir() {
			if p != root && skipDir(p, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		ft := classify(rel)
		if ft == ftNone || include != nil && !include(rel) {
			return nil
		}
		files <- treeFile{rel: rel, abs: p, ft: ft}
		return nil
	})
	close(files)
	wg.Wait()
	if walkErr != nil {
		return fmt.Errorf("walking %s: %w", dir, walkErr)
	}
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

// readFile reads a file into buf, growing it as needed.
func readFile(p string, buf []byte) ([]byte, fs.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if want := int(fi.Size()) + 512; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, fi, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
}
