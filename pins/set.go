package pins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// sortPins sorts pins by file, line and column.
func sortPins(ps []Pin) {
	slices.SortFunc(ps, func(a, b Pin) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
}

// Plan returns the changes Set would make, and writes nothing of its own.
// (It does finish a Set that was killed after its commit point; see Set.)
func Plan(dir string, u Update, opts ...Option) ([]Change, error) {
	return set(context.Background(), dir, u, false, opts)
}

// Set is SetContext without a context.
func Set(dir string, u Update, opts ...Option) ([]Change, error) {
	return set(context.Background(), dir, u, true, opts)
}

// SetContext rewrites every pin of u.Image under dir (limited by u.Include)
// and returns the changed lines, sorted by file and line. Setting the
// digest a pin already holds changes nothing.
//
// SetContext is all-or-nothing across the tree, even if the process is
// killed or a file cannot be replaced: it stages each new file beside its
// original, and replaces the originals only when every file was staged,
// none changed on disk meanwhile, and ctx is not done; a replacement that
// fails puts back the files already replaced. A journal kept outside the
// tree (see WithJournalDir) lets the next Scan, Plan or Set of the tree
// finish or undo a Set that was killed. When ctx ends (a signal) before
// the commit point, nothing is replaced, the staged files are removed, and
// ctx's error is returned. Sets of one tree take turns (a lock on its
// root).
func SetContext(ctx context.Context, dir string, u Update, opts ...Option) ([]Change, error) {
	return set(ctx, dir, u, true, opts)
}

// rewritten is one file a Set replaces: its old and new content.
type rewritten struct {
	rel      string
	st       fileStat
	old, out []byte
	changes  []Change
}

// planned is what a walk found for an Update.
type planned struct {
	done    []rewritten
	skipped []Skip
}

// changes are the changed lines of every file, sorted by file and line.
func (p planned) changes() []Change {
	var all []Change
	for _, r := range p.done {
		all = append(all, r.changes...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].File != all[j].File {
			return all[i].File < all[j].File
		}
		return all[i].Line < all[j].Line
	})
	return all
}

// report hands the skipped pins to o's WithSkipped, in file and line
// order.
func (p planned) report(o options) {
	if o.skipped == nil {
		return
	}
	slices.SortFunc(p.skipped, func(a, b Skip) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	for _, sk := range p.skipped {
		o.skipped(sk)
	}
}

func set(ctx context.Context, dir string, u Update, write bool, opts []Option) ([]Change, error) {
	up, err := prepare(u)
	if err != nil {
		return nil, err
	}
	o := makeOptions(opts)
	t, err := openTree(dir)
	if err != nil {
		return nil, err
	}
	var warn warnings
	unlock, err := prepareTree(ctx, t, write, o, &warn)
	if err != nil {
		warn.deliver(o.warn)
		return nil, err
	}
	defer unlock()
	res, err := plan(ctx, t, up, o, walkOptions{include: u.Include, warn: &warn, vendored: o.vendored}, write)
	warn.deliver(o.warn)
	if err == nil && write && len(res.done) > 0 {
		err = commit(ctx, t, o, res.done)
	}
	if err != nil {
		return nil, err
	}
	res.report(o)
	return res.changes(), nil
}

// plan walks files and computes each rewrite u asks for, keeping the old
// content of a file when keep is set (Set writes it back should a
// replacement fail; Edit returns the new).
func plan(ctx context.Context, files files, up *update, o options, wo walkOptions, keep bool) (planned, error) {
	var (
		mu     sync.Mutex
		res    planned
		tagged []Pin
		warn   = wo.warn
	)
	err := files.forEach(wo, func(f treeFile, src []byte, stat func() (fileStat, error)) error {
		if err := ctx.Err(); err != nil {
			return err
		}
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
		out, changes, fs, err := rewrite(f.rel, src, up)
		if err != nil {
			return err
		}
		for _, b := range fs.broken {
			warn.add(f.rel, b)
		}
		if len(fs.skipped) > 0 || len(fs.tagged) > 0 {
			mu.Lock()
			res.skipped = append(res.skipped, fs.skipped...)
			tagged = append(tagged, fs.tagged...)
			mu.Unlock()
		}
		if len(changes) == 0 {
			return nil
		}
		st, err := stat()
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.rel, err)
		}
		r := rewritten{rel: f.rel, st: st, out: out, changes: changes}
		if keep {
			r.old = bytes.Clone(src) // src is the walk's buffer
		}
		mu.Lock()
		res.done = append(res.done, r)
		mu.Unlock()
		return nil
	})
	if err == nil && up.checkVariants() {
		sortPins(tagged)
		err = mixedVariants(up.repo, tagged)
	}
	if err != nil {
		return planned{}, err
	}
	sort.Slice(res.done, func(i, j int) bool { return res.done[i].rel < res.done[j].rel })
	return res, nil
}

// errChanged reports a file that changed on disk while Set was rewriting it.
var errChanged = errors.New("changed on disk while pinbot was rewriting it; nothing was written")

// prepareTree locks t for a Set (write) and finishes or undoes a Set that
// was killed after its commit point. Without write, it locks only when
// there is a journal to finish.
func prepareTree(ctx context.Context, t tree, write bool, o options, warn *warnings) (unlock func(), err error) {
	jf, err := journalFile(o, t)
	if err != nil {
		return nil, err
	}
	if !write && !exists(jf) {
		return func() {}, nil
	}
	unlock, err = lockTree(ctx, t.root)
	if err != nil {
		return nil, err
	}
	if err := recoverTree(t, jf, warn.add); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}
