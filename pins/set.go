package pins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// Plan returns the changes Set would make, and writes nothing.
func Plan(dir string, u Update, opts ...Option) ([]Change, error) {
	return set(dir, u, false, opts)
}

// Set rewrites every pin of u.Image under dir (limited by u.Include) and
// returns the changed lines, sorted by file and line. Setting the digest a
// pin already holds changes nothing.
//
// Set is all-or-nothing: it writes each new file to a temporary file beside
// the original, with the original's mode; only when every file succeeded,
// and none changed on disk meanwhile, does it rename them over the
// originals. On any error nothing is replaced and the temporary files are
// removed. (A rename failing in that last step, which takes a file system
// error such as EIO, leaves the files renamed before it replaced; the error
// says how many.)
func Set(dir string, u Update, opts ...Option) ([]Change, error) {
	return set(dir, u, true, opts)
}

// rewritten is one file Set will replace.
type rewritten struct {
	rel, abs, tmp string
	st            fileStat
	changes       []Change
}

func set(dir string, u Update, write bool, opts []Option) ([]Change, error) {
	up, err := prepare(u)
	if err != nil {
		return nil, err
	}
	o := makeOptions(opts)
	var (
		mu   sync.Mutex
		done []rewritten
		warn warnings
	)
	err = forEachFile(dir, u.Include, func(f treeFile, src []byte, stat func() (fileStat, error)) error {
		if !up.mentions.in(src) {
			// It cannot hold a pin of this repository. If it could hold
			// one of another and is malformed, say so.
			if f.ft != ftDockerfile && containsDigest(src) {
				a := getArena()
				_, _, line, err := parseYAML(src, noKeys, a)
				putArena(a)
				if err != nil {
					warn.add(f.rel, &SyntaxError{File: f.rel, Line: line, Err: err})
				}
			}
			return nil
		}
		out, changes, err := rewrite(f.rel, src, up)
		if err != nil || len(changes) == 0 {
			return err
		}
		st, err := stat()
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.rel, err)
		}
		r := rewritten{rel: f.rel, abs: f.abs(), st: st, changes: changes}
		if write {
			if r.tmp, err = writeTemp(r.abs, out, st.mode); err != nil {
				return fmt.Errorf("writing %s: %w", f.rel, err)
			}
		}
		mu.Lock()
		done = append(done, r)
		mu.Unlock()
		return nil
	})
	warn.deliver(o.warn)
	if err == nil && write {
		err = replace(done)
	}
	if err != nil {
		for _, r := range done {
			if r.tmp != "" {
				os.Remove(r.tmp)
			}
		}
		return nil, err
	}
	var all []Change
	for _, r := range done {
		all = append(all, r.changes...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].File != all[j].File {
			return all[i].File < all[j].File
		}
		return all[i].Line < all[j].Line
	})
	return all, nil
}

// writeTemp writes content to a new temporary file beside path, with the
// given mode, and returns its name.
func writeTemp(path string, content []byte, mode fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".pinbot-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(mode & modeBits)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// errChanged reports a file that changed on disk while Set was rewriting it.
var errChanged = errors.New("changed on disk while pinbot was rewriting it; nothing was written")

// replace renames every temporary file over its original, after checking
// that no original changed since it was read. Renamed files are marked so
// the caller does not remove them.
func replace(done []rewritten) error {
	sort.Slice(done, func(i, j int) bool { return done[i].abs < done[j].abs })
	for _, r := range done {
		fi, err := os.Lstat(r.abs)
		if err != nil {
			return fmt.Errorf("checking %s: %w", r.rel, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() != r.st.size || !fi.ModTime().Equal(r.st.mtime) || fi.Mode()&modeBits != r.st.mode {
			return fmt.Errorf("%s: %w", r.rel, errChanged)
		}
	}
	for i := range done {
		if err := os.Rename(done[i].tmp, done[i].abs); err != nil {
			return fmt.Errorf("replacing %s (%d of %d files already replaced): %w", done[i].rel, i, len(done), err)
		}
		done[i].tmp = ""
	}
	return nil
}
