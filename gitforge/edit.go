package gitforge

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"pinbot.dev/pinbot/internal/redact"
)

// Edit makes a commit on top of the snapshot that sets the content of
// the files in changes (slash paths to their new content) and returns it
// as a snapshot, written to the store only: Push sends it. A file that
// exists keeps its mode; one that does not is added, with its
// directories, as a regular file. Only the trees on the changed paths are
// written again. A path through a link or onto anything but a regular
// file is refused. A commit that changes nothing is ErrNoChanges. The
// author is also the committer.
func (s *Snapshot) Edit(changes map[string][]byte, msg string, author Signature) (*Snapshot, error) {
	c, err := s.commitChanges(changes, msg, author)
	return c, redact.Error(err)
}

func (s *Snapshot) commitChanges(changes map[string][]byte, msg string, author Signature) (*Snapshot, error) {
	if err := author.Check(); err != nil {
		return nil, err
	}
	when := author.When
	if when.IsZero() {
		when = time.Now()
	}
	if len(changes) == 0 {
		return nil, ErrNoChanges
	}
	s.repo.mu.Lock()
	defer s.repo.mu.Unlock()
	var written []plumbing.Hash
	tree, err := s.repo.writeTree(s.tree, changes, &written)
	if err != nil {
		return nil, fmt.Errorf("committing on %s: %w", s.commit, err)
	}
	if tree == s.tree {
		return nil, ErrNoChanges
	}
	sig := object.Signature{Name: author.Name, Email: author.Email, When: when}
	h, err := s.repo.store(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: []plumbing.Hash{s.commit}})
	if err != nil {
		return nil, fmt.Errorf("writing the commit: %w", err)
	}
	return &Snapshot{repo: s.repo, commit: h, tree: tree, when: when, parent: s.commit, written: append(written, h)}, nil
}

// writeTree writes the tree base with the files of changes (paths
// relative to it) replaced, and the trees below it on their paths, and
// returns its hash, noting each object it writes in written. The caller
// holds r.mu.
func (r *Repository) writeTree(base plumbing.Hash, changes map[string][]byte, written *[]plumbing.Hash) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if base != plumbing.ZeroHash { // else a directory being added
		t, err := object.GetTree(r.st, base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading tree %s: %w", base, err)
		}
		entries = make([]object.TreeEntry, len(t.Entries))
		copy(entries, t.Entries)
	}
	index := make(map[string]int, len(entries))
	for i, e := range entries {
		index[e.Name] = i
	}
	subs := map[string]map[string][]byte{}
	for p, content := range changes {
		dir, rest, nested := strings.Cut(p, "/")
		if dir == "" || dir == "." || dir == ".." || dir == ".git" {
			return plumbing.ZeroHash, fmt.Errorf("%q: not a file name Git can hold", p)
		}
		i, ok := index[dir]
		if !ok {
			mode := filemode.Regular
			if nested {
				mode = filemode.Dir
			}
			entries = append(entries, object.TreeEntry{Name: dir, Mode: mode})
			i = len(entries) - 1
			index[dir] = i
		}
		switch {
		case nested && entries[i].Mode != filemode.Dir:
			return plumbing.ZeroHash, fmt.Errorf("%s: %s is not a directory", p, dir)
		case nested:
			if subs[dir] == nil {
				subs[dir] = map[string][]byte{}
			}
			subs[dir][rest] = content
		case entries[i].Mode != filemode.Regular && entries[i].Mode != filemode.Executable && entries[i].Mode != filemode.Deprecated:
			return plumbing.ZeroHash, fmt.Errorf("%s: not a regular file (%s)", p, entries[i].Mode)
		default:
			h, err := r.storeBlob(content)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("writing %s: %w", p, err)
			}
			entries[i].Hash = h
			*written = append(*written, h)
		}
	}
	for dir, sub := range subs {
		i := index[dir]
		h, err := r.writeTree(entries[i].Hash, sub, written) // ZeroHash: new
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s/%w", dir, err)
		}
		entries[i].Hash = h
	}
	// Git orders a tree's entries by name, a directory's as if it ended
	// in "/". Replacing hashes keeps the order; sort anyway, as Git would.
	sortName := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.SliceStable(entries, func(i, j int) bool { return sortName(entries[i]) < sortName(entries[j]) })
	h, err := r.store(&object.Tree{Entries: entries})
	if err == nil {
		*written = append(*written, h)
	}
	return h, err
}

// storeBlob writes content as a blob. The caller holds r.mu.
func (r *Repository) storeBlob(content []byte) (plumbing.Hash, error) {
	obj := r.st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.st.SetEncodedObject(obj)
}

// store encodes o into the store. The caller holds r.mu.
func (r *Repository) store(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := r.st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.st.SetEncodedObject(obj)
}

// Check refuses an identity Git would misread: an empty name or email, or
// one holding a line break, a NUL or an angle bracket, with which a
// config could forge header lines of the commit.
func (sig Signature) Check() error {
	if sig.Name == "" || sig.Email == "" {
		return errors.New("committing: the author needs a name and an email")
	}
	for _, f := range []struct{ what, v string }{{"name", sig.Name}, {"email", sig.Email}} {
		if i := strings.IndexAny(f.v, "\r\n\x00<>"); i >= 0 {
			return fmt.Errorf("committing: the author's %s %q holds %q: a line break, NUL or angle bracket would forge the commit's header", f.what, f.v, f.v[i])
		}
	}
	return nil
}
