package gitforge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// The working copy's index is kept equal to HEAD's tree, as git keeps it,
// and each entry records the size, mode and modification time its file had
// when it was written. That lets Commit and Fetch find what changed the way
// `git status` does: by one stat of each file, hashing or rewriting only the
// files whose stat differs. go-git's own Status and Reset also hash-compare
// through several walks of the tree, and cost more than the rest of a
// promotion.

// status is what differs between the index and the files on disk.
type status struct {
	// changed are tracked slash paths whose file may differ from the
	// index: missing, or of another size, mode or modification time, or
	// racily clean (written too close to the index to trust its time).
	changed []string
	// untracked are slash paths of files the index does not hold.
	untracked []string
}

// indexState reads the index with its entries by path and the time racily
// clean entries are measured against. An index with unmerged or
// skip-worktree entries is refused (the callers then fall back to go-git).
func (w *Worktree) indexState() (*index.Index, map[string]*index.Entry, time.Time, error) {
	idx, err := w.repo.Storer.Index()
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading the index of %s: %w", w.dir, err)
	}
	byPath := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		// Stage 0 is a merged entry (go-git's index.Merged constant says 1,
		// but its decoder, like git, gives 0); 1 to 3 are conflict stages.
		if e.Stage != 0 || e.SkipWorktree || e.IntentToAdd || e.Mode == filemode.Submodule {
			return nil, nil, time.Time{}, fmt.Errorf("reading the index of %s: entry %s is not a plain file", w.dir, e.Name)
		}
		byPath[e.Name] = e
	}
	// Entries written in the same clock tick as the index (or after it)
	// cannot be told apart from a same-size edit in that tick: git calls
	// them racily clean and looks at their content.
	racy := time.Now()
	if fi, err := os.Stat(filepath.Join(w.dir, ".git", "index")); err == nil {
		racy = fi.ModTime()
	}
	return idx, byPath, racy, nil
}

// stat compares every file under the working copy with the index by one
// lstat each.
func (w *Worktree) stat(byPath map[string]*index.Entry, racy time.Time) (status, error) {
	var st status
	seen := make(map[string]bool, len(byPath))
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(w.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		e := byPath[rel]
		if e == nil {
			st.untracked = append(st.untracked, rel)
			return nil
		}
		seen[rel] = true
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !clean(e, fi, racy) {
			st.changed = append(st.changed, rel)
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("reading the working copy %s: %w", w.dir, err)
	}
	for name := range byPath {
		if !seen[name] {
			st.changed = append(st.changed, name)
		}
	}
	return st, nil
}

// clean reports whether a file's stat still matches its index entry.
func clean(e *index.Entry, fi fs.FileInfo, racy time.Time) bool {
	mode, err := filemode.NewFromOSFileMode(fi.Mode())
	return err == nil && mode == e.Mode &&
		uint32(fi.Size()) == e.Size &&
		fi.ModTime().Equal(e.ModifiedAt) &&
		fi.ModTime().Before(racy)
}

// entryFor records a file just written (or read) at rel with hash h and
// mode in the index.
func entryFor(dir, rel string, e index.Entry) (*index.Entry, error) {
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	e.Name = rel
	e.ModifiedAt = fi.ModTime()
	e.Size = uint32(fi.Size())
	return &e, nil
}

// setEntries replaces the index entries of the given paths (nil removes
// one) and writes the index.
func (w *Worktree) setEntries(idx *index.Index, entries map[string]*index.Entry) error {
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		if _, ok := entries[e.Name]; !ok {
			kept = append(kept, e)
		}
	}
	idx.Entries = kept
	for _, e := range entries {
		if e != nil {
			idx.Entries = append(idx.Entries, e)
		}
	}
	if err := w.repo.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("writing the index of %s: %w", w.dir, err)
	}
	return nil
}

// removeFile removes the file at rel and then each parent directory that
// it left empty.
func removeFile(dir, rel string) error {
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
		return err
	}
	for parent := path.Dir(rel); parent != "."; parent = path.Dir(parent) {
		err := os.Remove(filepath.Join(dir, filepath.FromSlash(parent)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil // not empty
		}
	}
	return nil
}
