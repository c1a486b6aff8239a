package pins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"pinbot.dev/pinbot/internal/filelock"
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
// killed: it stages each new file beside its original, with the original's
// mode and owner; only when every file succeeded, none changed on disk
// meanwhile, and ctx is not done does it commit them through a journal (see
// JournalName). On any error before that, and when ctx ends (a signal),
// nothing is replaced and the staged files are removed; ctx's error is
// returned. A Set killed part way is finished or undone by the next Scan,
// Plan or Set of the tree, and the next Set removes the temporary files a
// killed one left. Sets of one tree take turns (a lock on its root).
func SetContext(ctx context.Context, dir string, u Update, opts ...Option) ([]Change, error) {
	return set(ctx, dir, u, true, opts)
}

// rewritten is one file Set will replace.
type rewritten struct {
	rel, abs, tmp string
	st            fileStat
	changes       []Change
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
	var (
		mu      sync.Mutex
		done    []rewritten
		skipped []Skip
		tagged  []Pin
		warn    warnings
		temps   tempList
	)
	unlock, err := prepareTree(ctx, t, write, &warn)
	if err != nil {
		warn.deliver(o.warn)
		return nil, err
	}
	defer unlock()
	wo := walkOptions{include: u.Include, warn: &warn, vendored: o.vendored}
	if write {
		wo.temps = &temps
	}
	err = forEachFile(t, wo, func(f treeFile, src []byte, stat func() (fileStat, error)) error {
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
			skipped = append(skipped, fs.skipped...)
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
		r := rewritten{rel: f.rel, abs: f.abs(), st: st, changes: changes}
		if write {
			if r.tmp, err = writeTemp(r.abs, out, st); err != nil {
				return fmt.Errorf("writing %s: %w", f.rel, err)
			}
		}
		mu.Lock()
		done = append(done, r)
		mu.Unlock()
		return nil
	})
	if write {
		removeTemps(t.root, &temps, warn.add)
	}
	warn.deliver(o.warn)
	if err == nil && up.checkVariants() {
		sortPins(tagged)
		err = mixedVariants(up.repo, tagged)
	}
	if err == nil && write && len(done) > 0 {
		o.hook(PhaseStaged)
		if err = context.Cause(ctx); err != nil {
			err = fmt.Errorf("stopped before replacing any file: %w", err)
		} else {
			err = commit(t.root, done, o.hook)
		}
	}
	if err != nil {
		for _, r := range done {
			if r.tmp != "" {
				os.Remove(r.tmp)
			}
		}
		return nil, err
	}
	if o.skipped != nil {
		slices.SortFunc(skipped, func(a, b Skip) int {
			if c := strings.Compare(a.File, b.File); c != 0 {
				return c
			}
			return a.Line - b.Line
		})
		for _, sk := range skipped {
			o.skipped(sk)
		}
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

// errChanged reports a file that changed on disk while Set was rewriting it.
var errChanged = errors.New("changed on disk while pinbot was rewriting it; nothing was written")

// prepareTree locks t for a Set (write) and finishes a Set that was killed
// after its commit point. Without write, it locks only when there is a
// journal to finish.
func prepareTree(ctx context.Context, t tree, write bool, warn *warnings) (unlock func(), err error) {
	if !write {
		if _, err := os.Lstat(t.root + string(os.PathSeparator) + JournalName); err != nil {
			return func() {}, nil
		}
	}
	unlock, err = filelock.Lock(ctx, t.root)
	if err != nil {
		return nil, err
	}
	if err := recoverTree(t.root, warn.add); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}
