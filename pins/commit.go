package pins

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"pinbot.dev/pinbot/internal/filelock"
	"pinbot.dev/pinbot/internal/private"
)

// How Set makes a rewrite of many files all-or-nothing, even when the
// process is killed (kill -9) part way or a file cannot be replaced:
//
//  1. Journal: a list of the files to replace, with a random token, is
//     written to a journal file outside the tree (see WithJournalDir), in
//     a directory of pinbot's own.
//  2. Stage: each new file goes to ".<name>.pinbot-<token>" beside its
//     original, and a copy of the original to ".<name>.pinbot-<token>.old",
//     with the original's mode and owner. Only files so named for this
//     very token are ever removed: a tracked file that looks like one is
//     the repository's.
//  3. Commit point: the journal says "committing".
//  4. Rename every staged file over its original. Should one fail, the
//     copies of the originals already replaced go back: the tree ends as
//     it was. Then the copies and the journal are removed.
//
// A run killed before step 3 leaves staged files and a journal that says
// so: the next Scan, Plan or Set removes them. A run killed in step 4
// leaves the journal: the next run finishes the renames (rolls forward),
// unless an original changed since it was staged or cannot be replaced,
// in which case it puts the replaced files back (rolls back). Either way
// the tree ends wholly old or wholly new. A lock on the tree's root keeps
// two Sets, or a Set and a recovery, from interleaving. Every write goes
// through os.Root, so nothing outside the tree is touched, whatever the
// journal or the tree says.
//
// The guarantee is against the process dying, not the machine: files are
// not synced to disk.

// Phase names a step of Set, reported to a WithPhaseHook.
type Phase string

// The phases of Set, in order.
const (
	// PhaseStaged: every new file and a copy of every original are
	// staged beside the originals; none is replaced. Set stops here,
	// changing nothing and removing what it staged, if its context is
	// done.
	PhaseStaged Phase = "staged"
	// PhaseJournaled: the files are staged and the journal committed; Set
	// will complete, or be completed by the next run.
	PhaseJournaled Phase = "journaled"
	// PhaseRenaming: the first file is replaced, the others are not yet.
	PhaseRenaming Phase = "renaming"
)

// Journal phases.
const (
	journalStaging    = "staging"
	journalCommitting = "committing"
)

// journal is what a Set records outside the tree.
type journal struct {
	Version int            `json:"version"`
	Root    string         `json:"root"`
	Token   string         `json:"token"`
	Phase   string         `json:"phase"`
	Files   []journalEntry `json:"files"`
}

// journalEntry is one file to replace (slash path relative to the root),
// and the original's size, modification time and mode when it was staged.
type journalEntry struct {
	File  string      `json:"file"`
	Size  int64       `json:"size"`
	MTime int64       `json:"mtime_ns"`
	Mode  fs.FileMode `json:"mode"`
}

// staged and backup are the names of an entry's new content and of its
// original's copy.
func (j journal) staged(e journalEntry) string { return tempName(e.File, j.Token) }
func (j journal) backup(e journalEntry) string { return tempName(e.File, j.Token) + ".old" }

func tempName(file, token string) string {
	return path.Join(path.Dir(file), "."+path.Base(file)+".pinbot-"+token)
}

// maxJournal bounds a journal's size when read.
const maxJournal = 16 << 20

// journalFile is where Set keeps the journal of t: a file of the journal
// directory named by a hash of the tree's root.
func journalFile(o options, t tree) (string, error) {
	dir := o.journalDir
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding the journal directory: %w (set one with WithJournalDir)", err)
		}
		dir = filepath.Join(cache, "pinbot", "journal")
	}
	sum := sha256.Sum256([]byte(t.root))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".json"), nil
}

// WithJournalDir keeps Set's journals in dir, a directory of pinbot's own
// (made 0700; one another user owns or may write to is refused). Default
// $XDG_CACHE_HOME/pinbot/journal.
func WithJournalDir(dir string) Option { return func(o *options) { o.journalDir = dir } }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func lockTree(ctx context.Context, root string) (func(), error) { return filelock.Lock(ctx, root) }

// writeJournal writes j to jf through a temporary file and a rename.
func writeJournal(jf string, j journal) error {
	if err := private.Dir(filepath.Dir(jf)); err != nil {
		return err
	}
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(jf), ".journal-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), jf)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing the journal %s: %w", jf, err)
	}
	return nil
}

// commit stages, journals and replaces the files of done; see the top of
// this file.
func commit(ctx context.Context, t tree, o options, done []rewritten) error {
	jf, err := journalFile(o, t)
	if err != nil {
		return err
	}
	token := make([]byte, 12)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	j := journal{Version: 2, Root: t.root, Token: hex.EncodeToString(token), Phase: journalStaging}
	for _, r := range done {
		j.Files = append(j.Files, journalEntry{File: r.rel, Size: r.st.size, MTime: r.st.mtime.UnixNano(), Mode: r.st.mode})
	}
	if err := writeJournal(jf, j); err != nil {
		return err
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return fmt.Errorf("opening %s: %w", t.dir, err)
	}
	defer root.Close()
	drop := func(cause error) error {
		removeStaged(root, j)
		if err := os.Remove(jf); err != nil {
			return errors.Join(cause, fmt.Errorf("removing the journal %s: %w", jf, err))
		}
		return cause
	}
	for i, r := range done {
		e := j.Files[i]
		if err := writeStaged(root, j.staged(e), r.out, r.st); err != nil {
			return drop(&WriteError{Op: "writing", File: r.rel, Err: err})
		}
		if err := writeStaged(root, j.backup(e), r.old, r.st); err != nil {
			return drop(&WriteError{Op: "writing", File: r.rel, Err: err})
		}
	}
	o.hook(PhaseStaged)
	if err := context.Cause(ctx); err != nil {
		return drop(fmt.Errorf("stopped before replacing any file: %w", err))
	}
	for _, e := range j.Files {
		if !unchanged(root, e) {
			return drop(&WriteError{File: e.File, Err: errChanged})
		}
	}
	j.Phase = journalCommitting
	if err := writeJournal(jf, j); err != nil {
		return drop(err)
	}
	o.hook(PhaseJournaled)
	return finish(root, jf, j, o.hook)
}

// writeStaged writes content to the new file name (relative to root),
// with the mode and, where it can, the owner of st. Only root may give a
// file away; another user keeps at least the group where it belongs to it.
func writeStaged(root *os.Root, name string, content []byte, st fileStat) error {
	f, err := root.OpenFile(filepath.FromSlash(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil && st.uid >= 0 {
		if err = f.Chown(st.uid, st.gid); errors.Is(err, syscall.EPERM) && os.Geteuid() != 0 {
			if err = f.Chown(-1, st.gid); errors.Is(err, syscall.EPERM) {
				err = nil
			}
		}
	}
	if err == nil {
		// After the chown, which clears set-user-ID and set-group-ID.
		err = f.Chmod(st.mode & modeBits)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(filepath.FromSlash(name))
	}
	return err
}

// unchanged reports whether e's original is still the regular file it was
// when staged.
func unchanged(root *os.Root, e journalEntry) bool {
	fi, err := root.Lstat(filepath.FromSlash(e.File))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == e.Size && fi.ModTime().UnixNano() == e.MTime && fi.Mode()&modeBits == e.Mode&modeBits
}

// finish replaces each original of j, in order, by its staged file; when
// one cannot be, it puts the copies of those already replaced back. It
// removes the copies and the journal once the tree is wholly new or wholly
// old, and keeps them, for the next run, when neither could be reached.
func finish(root *os.Root, jf string, j journal, hooks ...func(Phase)) error {
	for i, e := range j.Files {
		if !exists(filepath.Join(root.Name(), filepath.FromSlash(j.staged(e)))) {
			continue // replaced by a run that was killed
		}
		err := root.Rename(filepath.FromSlash(j.staged(e)), filepath.FromSlash(e.File))
		if err != nil {
			if rerr := rollBack(root, j); rerr != nil {
				return &WriteError{Op: "replacing", File: e.File, Err: fmt.Errorf("%w (%d of %d files replaced); putting the replaced files back failed too: %w (the journal %s is kept: the next pinbot run on this tree finishes it)",
					err, i, len(j.Files), rerr, jf)}
			}
			removeStaged(root, j)
			if err := os.Remove(jf); err != nil {
				return fmt.Errorf("removing the journal %s: %w", jf, err)
			}
			return &WriteError{Op: "replacing", File: e.File, Err: fmt.Errorf("%w; the files replaced before it were put back, so nothing changed", err)}
		}
		if i == 0 {
			for _, h := range hooks {
				h(PhaseRenaming)
			}
		}
	}
	removeStaged(root, j)
	if err := os.Remove(jf); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the journal %s: %w", jf, err)
	}
	return nil
}

// rollBack puts the copy of each original already replaced (its staged
// file gone) back.
func rollBack(root *os.Root, j journal) error {
	var errs []error
	for _, e := range j.Files {
		if exists(filepath.Join(root.Name(), filepath.FromSlash(j.staged(e)))) {
			continue // not replaced
		}
		if err := root.Rename(filepath.FromSlash(j.backup(e)), filepath.FromSlash(e.File)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("putting %s back: %w", e.File, err))
		}
	}
	return errors.Join(errs...)
}

// removeStaged removes what j staged that is still there: only the files
// named for its token.
func removeStaged(root *os.Root, j journal) {
	for _, e := range j.Files {
		for _, p := range []string{j.staged(e), j.backup(e)} {
			if fi, err := root.Lstat(filepath.FromSlash(p)); err == nil && fi.Mode().IsRegular() {
				root.Remove(filepath.FromSlash(p))
			}
		}
	}
}

// recoverTree finishes or undoes the Set whose journal jf a killed run
// left for t, if any, and reports what it did to warn. It must hold the
// tree's lock. A journal pinbot did not write for this tree is refused,
// naming it, and nothing is done.
func recoverTree(t tree, jf string, warn func(string, error)) error {
	j, err := readJournal(jf)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if j.Root != t.root {
		return fmt.Errorf("the journal %s is of %s, not of %s: not a journal pinbot wrote for this tree; remove it", jf, j.Root, t.root)
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return fmt.Errorf("opening %s: %w", t.dir, err)
	}
	defer root.Close()
	if j.Phase == journalStaging {
		removeStaged(root, j)
		if err := os.Remove(jf); err != nil {
			return fmt.Errorf("removing the journal %s: %w", jf, err)
		}
		warn(".", errors.New("removed the files an interrupted pins set had staged; the tree is as it was"))
		return nil
	}
	// Committed: roll forward, unless an original waiting for its new
	// content changed since it was staged.
	for _, e := range j.Files {
		if exists(filepath.Join(root.Name(), filepath.FromSlash(j.staged(e)))) && !unchanged(root, e) {
			if err := rollBack(root, j); err != nil {
				return fmt.Errorf("undoing an interrupted pins set: %w (the journal %s is kept)", err, jf)
			}
			removeStaged(root, j)
			if err := os.Remove(jf); err != nil {
				return fmt.Errorf("removing the journal %s: %w", jf, err)
			}
			warn(e.File, errors.New("an interrupted pins set was undone: the file changed since it was staged"))
			return nil
		}
	}
	if err := finish(root, jf, j); err != nil {
		return err
	}
	warn(".", fmt.Errorf("finished an interrupted pins set: %d files", len(j.Files)))
	return nil
}

// readJournal reads and checks a journal: a regular file of bounded size
// that pinbot could have written (its version, a token, local paths).
func readJournal(jf string) (journal, error) {
	f, err := os.OpenFile(jf, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return journal{}, err
		}
		if errors.Is(err, syscall.ELOOP) {
			return journal{}, fmt.Errorf("the journal %s is a symbolic link, not a regular file: not a journal pinbot wrote; remove it", jf)
		}
		return journal{}, fmt.Errorf("reading the journal %s: %w", jf, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return journal{}, fmt.Errorf("the journal %s is not a regular file: not a journal pinbot wrote; remove it", jf)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJournal+1))
	if err != nil {
		return journal{}, fmt.Errorf("reading the journal %s: %w", jf, err)
	}
	var j journal
	bad := func(why string) (journal, error) {
		return journal{}, fmt.Errorf("the journal %s %s: not a journal pinbot wrote; remove it", jf, why)
	}
	if len(data) > maxJournal || json.Unmarshal(data, &j) != nil || j.Version != 2 {
		return bad("does not parse")
	}
	if len(j.Token) != 24 || (j.Phase != journalStaging && j.Phase != journalCommitting) {
		return bad("has no token or phase")
	}
	if _, err := hex.DecodeString(j.Token); err != nil {
		return bad("has no token")
	}
	for _, e := range j.Files {
		if !filepath.IsLocal(filepath.FromSlash(e.File)) {
			return bad(fmt.Sprintf("names %q, outside the tree", e.File))
		}
	}
	return j, nil
}

// WriteError is a failure to write one file of a tree: File is its path
// relative to the tree, Op what was done to it ("writing", "replacing";
// "" when the file changed under pinbot). Nothing was left half-written.
type WriteError struct {
	Op, File string
	Err      error
}

// Error implements error.
func (e *WriteError) Error() string {
	if e.Op == "" {
		return e.File + ": " + e.Err.Error()
	}
	return e.Op + " " + e.File + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *WriteError) Unwrap() error { return e.Err }
