package gitforge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fileChange is the new content of one path in a tree: a blob and its
// mode, or a deletion.
type fileChange struct {
	hash    plumbing.Hash
	mode    filemode.FileMode
	deleted bool
}

// readFile reads the file at rel as git stores it (a symbolic link as its
// target) with its mode and blob hash; deleted when it is gone.
func (w *Worktree) readFile(rel string) (content []byte, c fileChange, err error) {
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fileChange{deleted: true}, nil
	}
	if err != nil {
		return nil, c, err
	}
	if c.mode, err = filemode.NewFromOSFileMode(fi.Mode()); err != nil {
		return nil, c, fmt.Errorf("%s: %w", rel, err)
	}
	if c.mode == filemode.Symlink {
		target, err := os.Readlink(abs)
		if err != nil {
			return nil, c, err
		}
		content = []byte(filepath.ToSlash(target))
	} else if content, err = os.ReadFile(abs); err != nil {
		return nil, c, err
	}
	c.hash = plumbing.ComputeHash(plumbing.BlobObject, content)
	return content, c, nil
}

// storeBlob writes content as a blob object.
func (w *Worktree) storeBlob(content []byte) error {
	obj := w.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	wr, err := obj.Writer()
	if err != nil {
		return err
	}
	if _, err := wr.Write(content); err != nil {
		return err
	}
	if err := wr.Close(); err != nil {
		return err
	}
	_, err = w.repo.Storer.SetEncodedObject(obj)
	return err
}

// writeTree writes the tree that is base (nil for none) with changes, keyed
// by slash path relative to it, applied, and returns its hash; the zero
// hash when the tree ends up empty. Only the trees on the changed paths are
// read and written.
func (w *Worktree) writeTree(base *object.Tree, changes map[string]fileChange) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if base != nil {
		for _, e := range base.Entries {
			entries[e.Name] = e
		}
	}
	subs := map[string]map[string]fileChange{}
	for p, c := range changes {
		dir, rest, nested := strings.Cut(p, "/")
		if !nested {
			if c.deleted {
				delete(entries, p)
			} else {
				entries[p] = object.TreeEntry{Name: p, Mode: c.mode, Hash: c.hash}
			}
			continue
		}
		if subs[dir] == nil {
			subs[dir] = map[string]fileChange{}
		}
		subs[dir][rest] = c
	}
	for dir, sub := range subs {
		var subtree *object.Tree
		if e, ok := entries[dir]; ok {
			if e.Mode != filemode.Dir {
				if onlyDeletions(sub) {
					continue // a file replaced the directory
				}
			} else {
				t, err := w.repo.TreeObject(e.Hash)
				if err != nil {
					return plumbing.ZeroHash, fmt.Errorf("reading tree %s: %w", dir, err)
				}
				subtree = t
			}
		}
		h, err := w.writeTree(subtree, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(entries, dir)
		} else {
			entries[dir] = object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	t := &object.Tree{}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// Git orders a tree's entries by name, a directory's name as if it
	// ended in "/".
	sortName := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(a, b int) bool { return sortName(t.Entries[a]) < sortName(t.Entries[b]) })
	return w.store(t)
}

func onlyDeletions(changes map[string]fileChange) bool {
	for _, c := range changes {
		if !c.deleted {
			return false
		}
	}
	return true
}

// store writes a tree or commit object.
func (w *Worktree) store(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := w.repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.repo.Storer.SetEncodedObject(obj)
}

// checkout writes the entry of tree at rel to the working copy (removing
// the file when the tree has none) and returns its new index entry (nil
// when removed).
func (w *Worktree) checkout(tree *object.Tree, rel string) (*index.Entry, error) {
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	e, err := tree.FindEntry(rel)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) ||
		(err == nil && e.Mode == filemode.Dir) {
		if err := removeFile(w.dir, rel); err != nil {
			return nil, fmt.Errorf("removing %s: %w", rel, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s from the tree: %w", rel, err)
	}
	blob, err := w.repo.BlobObject(e.Hash)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	var content bytes.Buffer
	_, err = io.Copy(&content, r)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	// Whatever is there (a file, a directory, a link) gives way.
	if err := os.RemoveAll(abs); err != nil {
		return nil, fmt.Errorf("replacing %s: %w", rel, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	switch e.Mode {
	case filemode.Symlink:
		err = os.Symlink(filepath.FromSlash(content.String()), abs)
	case filemode.Executable:
		err = os.WriteFile(abs, content.Bytes(), 0o755)
	default:
		err = os.WriteFile(abs, content.Bytes(), 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	ie, err := entryFor(w.dir, rel, index.Entry{Hash: e.Hash, Mode: e.Mode})
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	return ie, nil
}
