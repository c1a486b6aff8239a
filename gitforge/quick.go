package gitforge

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// quickCommit commits what changed on disk without go-git's status walk:
// one stat per file finds the candidates (see status), only those are read
// and hashed, and the new tree is the parent's tree with just the trees on
// the changed paths rewritten. ok is false when the index cannot be used
// this way; the caller then commits through go-git.
func (w *Worktree) quickCommit(msg string, sig *object.Signature) (h plumbing.Hash, ok bool, err error) {
	idx, byPath, racy, err := w.indexState()
	if err != nil {
		return h, false, nil
	}
	parent, err := w.repo.CommitObject(w.head)
	if err != nil {
		return h, false, nil
	}
	tree, err := parent.Tree()
	if err != nil {
		return h, false, nil
	}
	st, err := w.stat(byPath, racy)
	if err != nil {
		return h, true, err
	}
	changes := map[string]fileChange{}
	entries := map[string]*index.Entry{}
	for _, rel := range append(st.changed, st.untracked...) {
		content, c, err := w.readFile(rel)
		if err != nil {
			return h, true, fmt.Errorf("staging %s: %w", rel, err)
		}
		old := byPath[rel]
		switch {
		case c.deleted && old == nil:
			continue
		case c.deleted:
			changes[rel], entries[rel] = c, nil
			continue
		case old != nil && old.Hash == c.hash && old.Mode == c.mode:
			// Touched but unchanged: only its stat is refreshed.
		default:
			if err := w.storeBlob(content); err != nil {
				return h, true, fmt.Errorf("staging %s: %w", rel, err)
			}
			changes[rel] = c
		}
		if entries[rel], err = entryFor(w.dir, rel, index.Entry{Hash: c.hash, Mode: c.mode}); err != nil {
			return h, true, fmt.Errorf("staging %s: %w", rel, err)
		}
	}
	if len(changes) == 0 {
		if len(entries) > 0 {
			_ = w.setEntries(idx, entries) // only a faster next status
		}
		return h, true, ErrNoChanges
	}
	treeHash, err := w.writeTree(tree, changes)
	if err == nil && treeHash.IsZero() {
		treeHash, err = w.store(&object.Tree{})
	}
	if err != nil {
		return h, true, fmt.Errorf("writing the tree: %w", err)
	}
	if treeHash == tree.Hash {
		return h, true, ErrNoChanges
	}
	commit := &object.Commit{Author: *sig, Committer: *sig, Message: msg, TreeHash: treeHash, ParentHashes: []plumbing.Hash{w.head}}
	if h, err = w.store(commit); err != nil {
		return h, true, fmt.Errorf("writing the commit: %w", err)
	}
	if err := w.setHead(h); err != nil {
		return h, true, err
	}
	return h, true, w.setEntries(idx, entries)
}

// quickReset makes HEAD, the index and the files the commit target without
// go-git's status walks: it rewrites only the files that differ on disk
// from the index (one stat each), removes untracked ones, and rewrites the
// paths where the trees of HEAD and target differ. ok is false when the
// index or HEAD cannot be used this way; the caller then resets through
// go-git.
func (w *Worktree) quickReset(target plumbing.Hash) (ok bool, err error) {
	idx, byPath, racy, err := w.indexState()
	if err != nil {
		return false, nil
	}
	head, err := w.repo.Head()
	if err != nil {
		return false, nil
	}
	targetCommit, err := w.repo.CommitObject(target)
	if err != nil {
		return false, nil
	}
	targetTree, err := targetCommit.Tree()
	if err != nil {
		return false, nil
	}
	paths := map[string]bool{}
	if head.Hash() != target {
		headCommit, err := w.repo.CommitObject(head.Hash())
		if err != nil {
			return false, nil
		}
		headTree, err := headCommit.Tree()
		if err != nil {
			return false, nil
		}
		diff, err := object.DiffTree(headTree, targetTree)
		if err != nil {
			return false, nil
		}
		for _, c := range diff {
			for _, name := range []string{c.From.Name, c.To.Name} {
				if name != "" {
					paths[name] = true
				}
			}
		}
	}
	st, err := w.stat(byPath, racy)
	if err != nil {
		return true, err
	}
	for _, rel := range st.untracked {
		if err := removeFile(w.dir, rel); err != nil {
			return true, fmt.Errorf("removing untracked %s: %w", rel, err)
		}
	}
	for _, rel := range st.changed {
		paths[rel] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted) // a directory's file before what is under it
	entries := map[string]*index.Entry{}
	for _, rel := range sorted {
		if entries[rel], err = w.checkout(targetTree, rel); err != nil {
			return true, err
		}
	}
	if len(entries) > 0 {
		if err := w.setEntries(idx, entries); err != nil {
			return true, err
		}
	}
	return true, w.setHead(target)
}

// setHead points HEAD (the branch it names, if any) at h.
func (w *Worktree) setHead(h plumbing.Hash) error {
	head, err := w.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("reading HEAD of %s: %w", w.dir, err)
	}
	name := plumbing.HEAD
	if head.Type() == plumbing.SymbolicReference {
		name = head.Target()
	}
	if err := w.repo.Storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return fmt.Errorf("moving HEAD of %s: %w", w.dir, err)
	}
	w.head = h
	return nil
}
