package reconciler

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/gitsource"
)

// hasher is a revision's files that name the Git object at a path
// (gitforge's Snapshot FS): "" when there is none.
type hasher interface {
	Hash(name string) string
}

// input is one file or directory a render read, and its Git object id
// then: a directory's id covers everything under it.
type input struct{ name, hash string }

// inputs are what an app's last render of its branch read, and where
// from: a push that changes none of them cannot change what the app
// renders (changedIn).
type inputs struct {
	repo, branch string
	auth         gitforge.Auth
	read         []input
}

// readFS is a revision's files that note every name a render asks for,
// found or not, with its object id.
type readFS struct {
	fsys fs.FS
	h    hasher // nil: nothing is noted

	mu    sync.Mutex
	names map[string]string
}

func newReadFS(fsys fs.FS) *readFS {
	h, _ := fsys.(hasher)
	return &readFS{fsys: fsys, h: h, names: map[string]string{}}
}

func (r *readFS) note(name string) {
	if r.h == nil {
		return
	}
	name = path.Clean(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.names[name]; !ok {
		r.names[name] = r.h.Hash(name)
	}
}

func (r *readFS) Open(name string) (fs.File, error) { r.note(name); return r.fsys.Open(name) }

func (r *readFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r.note(name)
	return fs.ReadDir(r.fsys, name)
}

func (r *readFS) ReadFile(name string) ([]byte, error) {
	r.note(name)
	return fs.ReadFile(r.fsys, name)
}

func (r *readFS) Stat(name string) (fs.FileInfo, error) {
	r.note(name)
	return fs.Stat(r.fsys, name)
}

func (r *readFS) Lstat(name string) (fs.FileInfo, error) {
	r.note(name)
	return fs.Lstat(r.fsys, name)
}

func (r *readFS) ReadLink(name string) (string, error) {
	r.note(name)
	return fs.ReadLink(r.fsys, name)
}

// read is what was read, without what lies under a directory read;
// nil when the files could not name their objects.
func (r *readFS) read() []input {
	if r.h == nil {
		return nil
	}
	r.mu.Lock()
	names := make([]string, 0, len(r.names))
	for n := range r.names {
		names = append(names, n)
	}
	r.mu.Unlock()
	slices.Sort(names) // a directory sorts before what lies under it
	out := []input{}
	for _, n := range names {
		if len(out) > 0 && under(n, out[len(out)-1].name) {
			continue
		}
		out = append(out, input{name: n, hash: r.names[n]})
	}
	return out
}

// under reports whether name is dir or lies under it.
func under(name, dir string) bool {
	return dir == "." || name == dir || strings.HasPrefix(name, dir+"/")
}

// changedIn reports whether fsys, a newer revision, differs from in at
// any input; nothing noted, or files that cannot say, may have.
func changedIn(in []input, fsys fs.FS) bool {
	h, ok := fsys.(hasher)
	if in == nil || !ok {
		return true
	}
	for _, i := range in {
		if h.Hash(i.name) != i.hash {
			return true
		}
	}
	return false
}

// setInputs notes what the app's last render of its branch read.
func (st *appState) setInputs(in *inputs) {
	st.mu.Lock()
	st.inputs = in
	st.mu.Unlock()
}

// changedBudget bounds the fetches TriggerChanged makes: past it, every
// app left is passed, as if each had changed.
const changedBudget = 3 * time.Second

// TriggerChanged asks for a pass of each of names whose inputs the head
// of its branch changed: it fetches each branch once and compares the
// objects its last render read. An app not rendered yet, and every app
// of a branch that cannot be fetched, is passed. It returns the apps
// asked for. A push to a repository of thousands of apps then passes
// those it touched, not all: the others note the new commit at their
// next interval.
func (r *Reconciler) TriggerChanged(ctx context.Context, names []string) []string {
	ctx, cancel := context.WithTimeout(ctx, changedBudget)
	defer cancel()
	set := r.set.Load()
	type branch struct {
		repo, branch string
		auth         gitforge.Auth
	}
	var out []string
	pending := map[branch][]string{}
	read := map[string][]input{}
	for _, name := range names {
		st := set.states[name]
		if st == nil {
			continue
		}
		st.mu.Lock()
		in := st.inputs
		st.mu.Unlock()
		if in == nil || in.read == nil {
			out = append(out, name)
			continue
		}
		b := branch{in.repo, in.branch, in.auth}
		pending[b] = append(pending[b], name)
		read[name] = in.read
	}
	for b, apps := range pending {
		err := r.source.Head(ctx, b.repo, b.branch, b.auth, func(rev gitsource.Revision) error {
			for _, name := range apps {
				if changedIn(read[name], rev.FS) {
					out = append(out, name)
				}
			}
			return nil
		})
		if err != nil {
			out = append(out, apps...)
		}
	}
	for _, name := range out {
		_ = r.Trigger(name)
	}
	return out
}
