package gitforge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"pinbot.dev/pinbot/internal/confined"
)

// The rules of a Snapshot's files are internal/confined's, the one home of
// how pinbot reads a repository: no link followed (confined.ErrLink),
// every read bounded (confined.MaxFile, confined.ErrTooLarge).

// Snapshot is one commit of a repository, read straight from the object
// store: there is no working copy, so nothing of the repository is ever
// written to disk or resolved by the operating system. Its FS holds the
// commit's regular files; a symbolic link is listed (so walkers can say
// they skip it) but never opened, and submodules are not files.
type Snapshot struct {
	repo   *Repository
	branch string // the branch it was fetched as; "" for an edit
	commit plumbing.Hash
	tree   plumbing.Hash
	when   time.Time
	// parent and written are set on a snapshot Edit made: its parent,
	// and the objects it wrote, which Push sends.
	parent  plumbing.Hash
	written []plumbing.Hash
}

// snapshotAt is the snapshot of commit when the store holds it and its
// tree. The caller holds r.mu.
func (r *Repository) snapshotAt(commit plumbing.Hash) (*Snapshot, bool) {
	c, err := object.GetCommit(r.st, commit)
	if err != nil {
		return nil, false
	}
	if _, err := object.GetTree(r.st, c.TreeHash); err != nil {
		return nil, false
	}
	return &Snapshot{repo: r, commit: commit, tree: c.TreeHash, when: c.Committer.When}, true
}

// Branch is the branch the snapshot was fetched as (a Fetch of "" names
// the default branch here); "" for an Edit's.
func (s *Snapshot) Branch() string { return s.branch }

// Commit is the snapshot's commit id.
func (s *Snapshot) Commit() string { return s.commit.String() }

// Tree is the id of the snapshot's tree: two commits with the same tree
// hold the same files.
func (s *Snapshot) Tree() string { return s.tree.String() }

// Parents are the ids of the parents of the snapshot's commit.
func (s *Snapshot) Parents() ([]string, error) {
	s.repo.mu.Lock()
	defer s.repo.mu.Unlock()
	c, err := object.GetCommit(s.repo.st, s.commit)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", s.commit, err)
	}
	out := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		out[i] = p.String()
	}
	return out, nil
}

// FS is the snapshot's files as an io/fs file system, read only.
func (s *Snapshot) FS() fs.FS { return snapshotFS{s} }

// ReadFile reads the regular file at name (a slash path), bounded by
// confined.MaxFile.
func (s *Snapshot) ReadFile(name string) ([]byte, error) { return fs.ReadFile(s.FS(), name) }

// entry finds the tree entry at name, refusing paths through links. The
// root is a directory entry of the root tree.
func (s *Snapshot) entry(name string) (object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return object.TreeEntry{}, fs.ErrInvalid
	}
	if name == "." {
		return object.TreeEntry{Name: ".", Mode: filemode.Dir, Hash: s.tree}, nil
	}
	s.repo.mu.Lock()
	defer s.repo.mu.Unlock()
	tree := s.tree
	parts := strings.Split(name, "/")
	for i, part := range parts {
		t, err := s.repo.tree(tree)
		if err != nil {
			return object.TreeEntry{}, fmt.Errorf("reading the tree of %s: %w", path.Join(parts[:i]...), err)
		}
		var found *object.TreeEntry
		if j, ok := t.index[part]; ok {
			found = &t.entries[j]
		}
		switch {
		case found == nil:
			return object.TreeEntry{}, fs.ErrNotExist
		case i == len(parts)-1:
			return *found, nil
		case found.Mode == filemode.Symlink:
			return object.TreeEntry{}, confined.ErrLink
		case found.Mode != filemode.Dir:
			return object.TreeEntry{}, fs.ErrNotExist
		}
		tree = found.Hash
	}
	return object.TreeEntry{}, fs.ErrNotExist
}

// snapshotFS is a Snapshot as an fs.FS.
type snapshotFS struct{ s *Snapshot }

// Open implements fs.FS.
func (f snapshotFS) Open(name string) (fs.File, error) {
	e, err := f.s.entry(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	info := entryInfo{s: f.s, hash: e.Hash, name: path.Base(name), mode: e.Mode, size: 0, when: f.s.when}
	switch e.Mode {
	case filemode.Dir:
		return &snapshotDir{fs: f, name: name, info: info, hash: e.Hash}, nil
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
	case filemode.Symlink:
		return nil, &fs.PathError{Op: "open", Path: name, Err: confined.ErrLink}
	default:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("not a regular file (%s)", e.Mode)}
	}
	data, err := f.s.blob(e.Hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	info.size = int64(len(data))
	return &snapshotFile{info: info, r: bytes.NewReader(data)}, nil
}

// Hash is the object id of the entry at name (a blob, or a tree whose id
// covers everything under it), "" when there is none: two snapshots
// agree on what lies at name exactly when their hashes do.
func (f snapshotFS) Hash(name string) string {
	e, err := f.s.entry(name)
	if err != nil {
		return ""
	}
	return e.Hash.String()
}

// Lstat implements fs.ReadLinkFS: the entry at name, a link not
// followed.
func (f snapshotFS) Lstat(name string) (fs.FileInfo, error) {
	e, err := f.s.entry(name)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return entryInfo{s: f.s, hash: e.Hash, name: path.Base(name), mode: e.Mode, size: -1, when: f.s.when}, nil
}

// ReadLink implements fs.ReadLinkFS: what the link at name says. pinbot
// never follows it.
func (f snapshotFS) ReadLink(name string) (string, error) {
	e, err := f.s.entry(name)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	if e.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	b, err := f.s.blob(e.Hash)
	return string(b), err
}

// blob reads the blob hash, bounded by confined.MaxFile.
func (s *Snapshot) blob(hash plumbing.Hash) ([]byte, error) {
	s.repo.mu.Lock()
	defer s.repo.mu.Unlock()
	b, err := object.GetBlob(s.repo.st, hash)
	if err != nil {
		return nil, err
	}
	if b.Size > confined.MaxFile {
		return nil, confined.ErrTooLarge
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, confined.MaxFile+1))
}

// entryInfo is the fs.FileInfo and fs.DirEntry of a tree entry.
type entryInfo struct {
	s    *Snapshot
	hash plumbing.Hash
	name string
	mode filemode.FileMode
	size int64 // -1 until asked: listing a tree reads no blob
	when time.Time
}

func (i entryInfo) Name() string { return i.name }

// Size is a blob's size, looked up in the store when first asked (a
// directory's is 0).
func (i entryInfo) Size() int64 {
	if i.size >= 0 || i.mode == filemode.Dir {
		return max(i.size, 0)
	}
	i.s.repo.mu.Lock()
	defer i.s.repo.mu.Unlock()
	o, err := i.s.repo.st.EncodedObject(plumbing.AnyObject, i.hash)
	if err != nil {
		return 0
	}
	return o.Size()
}

func (i entryInfo) ModTime() time.Time { return i.when }
func (i entryInfo) IsDir() bool        { return i.mode == filemode.Dir }
func (i entryInfo) Sys() any           { return nil }

// Mode maps Git's modes: a directory, a regular or executable file, a
// symbolic link; a submodule is irregular.
func (i entryInfo) Mode() fs.FileMode {
	switch i.mode {
	case filemode.Dir:
		return fs.ModeDir | 0o755
	case filemode.Executable:
		return 0o755
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case filemode.Regular, filemode.Deprecated:
		return 0o644
	}
	return fs.ModeIrregular
}

func (i entryInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i entryInfo) Info() (fs.FileInfo, error) { return i, nil }

type snapshotFile struct {
	info entryInfo
	r    *bytes.Reader
}

func (f *snapshotFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *snapshotFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *snapshotFile) Close() error               { return nil }

type snapshotDir struct {
	fs   snapshotFS
	name string
	info entryInfo
	hash plumbing.Hash
	left []fs.DirEntry // what ReadDir has not returned yet, once read
	read bool
}

func (d *snapshotDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *snapshotDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *snapshotDir) Close() error { return nil }

// ReadDir lists the directory's entries, sorted by name. Sizes are looked
// up only when asked: a walk need not touch every blob.
func (d *snapshotDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		all, err := d.entries()
		if err != nil {
			return nil, err
		}
		d.left, d.read = all, true
	}
	if n <= 0 {
		out := d.left
		d.left = nil
		return out, nil
	}
	if len(d.left) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(d.left))
	out := d.left[:k]
	d.left = d.left[k:]
	return out, nil
}

func (d *snapshotDir) entries() ([]fs.DirEntry, error) {
	s := d.fs.s
	s.repo.mu.Lock()
	t, err := s.repo.tree(d.hash)
	s.repo.mu.Unlock()
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.name, Err: err}
	}
	out := make([]fs.DirEntry, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, entryInfo{s: s, hash: e.Hash, name: e.Name, mode: e.Mode, size: -1, when: s.when})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// decodedTree is a tree object decoded once, with its entries indexed by
// name: a walk of a snapshot looks up every file by path, and decoding a
// tree, or scanning a directory of 20,000 entries, per lookup made
// reading a large repository quadratic.
type decodedTree struct {
	entries []object.TreeEntry
	index   map[string]int
}

// maxTrees bounds the decoded trees a Repository keeps.
const maxTrees = 1 << 16

// tree returns the decoded tree hash. The caller holds r.mu.
func (r *Repository) tree(hash plumbing.Hash) (*decodedTree, error) {
	if t := r.trees[hash]; t != nil {
		return t, nil
	}
	obj, err := object.GetTree(r.st, hash)
	if err != nil {
		return nil, err
	}
	t := &decodedTree{entries: obj.Entries, index: make(map[string]int, len(obj.Entries))}
	for i, e := range obj.Entries {
		t.index[e.Name] = i
	}
	if r.trees == nil || len(r.trees) >= maxTrees {
		r.trees = map[plumbing.Hash]*decodedTree{}
	}
	r.trees[hash] = t
	return t, nil
}
