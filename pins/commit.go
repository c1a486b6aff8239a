package pins

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// How Set makes a rewrite of many files all-or-nothing, even when the
// process is killed (kill -9) part way:
//
//  1. Stage: each new file goes to a temporary file beside its original,
//     named ".<name>.pinbot-<digits>", with the original's mode and owner.
//  2. Journal: a list of (temporary file, original) pairs is written to
//     JournalName at the tree's root, through a temporary file and a
//     rename. That rename is the commit point.
//  3. Rename every temporary file over its original, then remove the
//     journal.
//
// A run killed before step 2 leaves only temporary files: the tree is
// unchanged, and the next Set removes them. A run killed in step 3 leaves
// the journal: the next Scan, Plan or Set finishes the renames first (rolls
// forward), unless an original changed since it was staged, in which case
// the journal is dropped and its temporary files removed (rolled back: the
// tree moved on, as after a git reset). A lock on the tree's root directory
// keeps two Sets, or a Set and a recovery, from interleaving.
//
// The guarantee is against the process dying, not the machine: files are
// not synced to disk.

// JournalName is the file at the root of a tree that records a Set between
// its commit point and its last rename.
const JournalName = ".pinbot-journal"

// Phase names a step of Set, reported to a WithPhaseHook.
type Phase string

// The phases of Set, in order.
const (
	// PhaseStaged: every new file is written beside its original; nothing
	// is replaced yet. Set stops here, changing nothing, if its context is
	// done.
	PhaseStaged Phase = "staged"
	// PhaseJournaled: the journal is written; Set will complete.
	PhaseJournaled Phase = "journaled"
	// PhaseRenaming: the first file is replaced, the others are not yet.
	PhaseRenaming Phase = "renaming"
)

// tempMarker is what names a temporary file of Set: "." + name + marker +
// digits.
const tempMarker = ".pinbot-"

// isTempName reports a file name Set gives its temporary files.
func isTempName(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	i := strings.LastIndex(name, tempMarker)
	if i <= 0 || i+len(tempMarker) == len(name) {
		return false
	}
	for _, c := range name[i+len(tempMarker):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// tempList collects temporary files found by a walk.
type tempList struct {
	mu    sync.Mutex
	paths []string
}

func (l *tempList) add(p string) {
	l.mu.Lock()
	l.paths = append(l.paths, p)
	l.mu.Unlock()
}

// writeTemp writes content to a new temporary file beside path, with the
// mode and, where it can, the owner of st, and returns its name. Only root
// may give a file away; another user keeps at least the group where it
// belongs to it.
func writeTemp(path string, content []byte, st fileStat) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempMarker+"*")
	if err != nil {
		return "", err
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
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// journal is the content of JournalName.
type journal struct {
	Version int            `json:"version"`
	Files   []journalEntry `json:"files"`
}

// journalEntry is one file to replace: Temp over File (both relative to
// the root, slash-separated), and the original's size and modification
// time when it was staged.
type journalEntry struct {
	File  string `json:"file"`
	Temp  string `json:"temp"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime_ns"`
}

// commit runs steps 2 and 3 for the staged files.
func commit(root string, done []rewritten, hook func(Phase)) error {
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
	j := journal{Version: 1, Files: make([]journalEntry, len(done))}
	for i, r := range done {
		tmp, err := filepath.Rel(root, r.tmp)
		if err != nil {
			return fmt.Errorf("journaling %s: %w", r.rel, err)
		}
		j.Files[i] = journalEntry{File: r.rel, Temp: filepath.ToSlash(tmp), Size: r.st.size, MTime: r.st.mtime.UnixNano()}
	}
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("journaling: %w", err)
	}
	jpath := filepath.Join(root, JournalName)
	tmp, err := writeTemp(jpath, data, fileStat{mode: 0o644, uid: -1})
	if err != nil {
		return fmt.Errorf("writing the journal %s: %w", JournalName, err)
	}
	if err := os.Rename(tmp, jpath); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the journal %s: %w", JournalName, err)
	}
	// Committed: from here on, a failure is finished by the next run.
	for i := range done {
		done[i].tmp = ""
	}
	hook(PhaseJournaled)
	if err := rollForward(root, j, hook); err != nil {
		return fmt.Errorf("%w (the journal %s is kept: the next pinbot run on this tree finishes it)", err, JournalName)
	}
	return nil
}

// rollForward renames every staged file of j still present over its
// original, then removes the journal.
func rollForward(root string, j journal, hooks ...func(Phase)) error {
	for i, e := range j.Files {
		err := os.Rename(filepath.Join(root, filepath.FromSlash(e.Temp)), filepath.Join(root, filepath.FromSlash(e.File)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("replacing %s (%d of %d files already replaced): %w", e.File, i, len(j.Files), err)
		}
		if i == 0 {
			for _, h := range hooks {
				h(PhaseRenaming)
			}
		}
	}
	if err := os.Remove(filepath.Join(root, JournalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the journal %s: %w", JournalName, err)
	}
	return nil
}

// recoverTree finishes or drops the journal a killed Set left in root, if
// any, and reports what it did to warn. It must hold the tree's lock.
func recoverTree(root string, warn func(string, error)) error {
	data, err := os.ReadFile(filepath.Join(root, JournalName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the journal %s: %w", JournalName, err)
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil || j.Version != 1 {
		return fmt.Errorf("%s: not a journal pinbot can read (%v); remove it and the .*.pinbot-* files beside the files it names", JournalName, err)
	}
	// Only paths inside the tree, as the journal wrote them.
	for _, e := range j.Files {
		for _, p := range []string{e.File, e.Temp} {
			if !filepath.IsLocal(filepath.FromSlash(p)) {
				return fmt.Errorf("%s: path %q leaves the tree", JournalName, p)
			}
		}
	}
	// Roll back if an original still waiting for its new content changed
	// since it was staged.
	moved := ""
	for _, e := range j.Files {
		tmp := filepath.Join(root, filepath.FromSlash(e.Temp))
		if _, err := os.Lstat(tmp); err != nil {
			continue // already renamed
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(e.File)))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.Size || fi.ModTime().UnixNano() != e.MTime {
			moved = e.File
			break
		}
	}
	if moved != "" {
		for _, e := range j.Files {
			os.Remove(filepath.Join(root, filepath.FromSlash(e.Temp)))
		}
		if err := os.Remove(filepath.Join(root, JournalName)); err != nil {
			return fmt.Errorf("removing the journal %s: %w", JournalName, err)
		}
		warn(JournalName, fmt.Errorf("an interrupted pins set was dropped: %s changed since it was staged", moved))
		return nil
	}
	if err := rollForward(root, j); err != nil {
		return err
	}
	warn(JournalName, fmt.Errorf("finished an interrupted pins set: %d files", len(j.Files)))
	return nil
}

// removeTemps removes the temporary files a walk found, left by a Set that
// was killed before its commit point. It must hold the tree's lock.
func removeTemps(root string, l *tempList, warn func(string, error)) {
	for _, p := range l.paths {
		if err := os.Remove(p); err == nil {
			rel, _ := filepath.Rel(root, p)
			warn(filepath.ToSlash(rel), errors.New("removed a temporary file left by an interrupted pins set"))
		}
	}
}
