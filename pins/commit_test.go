package pins

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/filetree"
)

// killedAt runs Set on dir and stops it dead at phase, as kill -9 would:
// the goroutine exits inside the phase hook, so none of Set's own clean-up
// runs (only its deferred closes and unlock, which a killed process's
// kernel does too). It fails the test unless Set reached phase.
func killedAt(t *testing.T, dir string, u Update, phase Phase, opts ...Option) {
	t.Helper()
	reached := make(chan bool, 1)
	go func() {
		defer close(reached)
		Set(dir, u, append(opts, WithPhaseHook(func(p Phase) {
			if p == phase {
				reached <- true
				runtime.Goexit()
			}
		}))...)
	}()
	if !<-reached {
		t.Fatalf("Set finished without reaching phase %s", phase)
	}
}

// leftovers lists what a Set left behind under dir: files named for a
// staged file or a copy of an original.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for p := range readTree(t, dir) {
		if strings.Contains(path.Base(p), ".pinbot-") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// journalIn returns the journal files of the journal directory jd.
func journalIn(t *testing.T, jd string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(jd, "*.json"))
	return m
}

// TestSetKilledAtEachPhase kills a Set over many files at each phase and
// checks that the next run converges: before the commit point to the old
// tree, after it to the new one, with nothing staged and no journal left
// either way. (cmd/pinbot kills the real process.)
func TestSetKilledAtEachPhase(t *testing.T) {
	files := map[string]string{}
	for _, d := range []string{"a", "b", "c"} {
		for _, f := range []string{"1.yaml", "2.yaml", "Dockerfile"} {
			if f == "Dockerfile" {
				files[d+"/"+f] = "FROM nginx@" + digestA + "\n"
			} else {
				files[d+"/"+f] = "# " + d + f + "\nimage: nginx:1@" + digestA + "\n"
			}
		}
	}
	after := func(digests ...string) map[string]string {
		dir := filetree.Write(t, files)
		for _, d := range digests {
			if _, err := Set(dir, Update{Image: "nginx", Digest: d}, WithJournalDir(t.TempDir())); err != nil {
				t.Fatal(err)
			}
		}
		return readTree(t, dir)
	}
	for _, tc := range []struct {
		phase Phase
		next  string
		want  map[string]string // the tree after the next run
	}{
		{PhaseStaged, "scan", files},
		{PhaseStaged, "set", after(digestC)},
		{PhaseJournaled, "scan", after(digestB)},
		{PhaseJournaled, "set", after(digestB, digestC)},
		{PhaseRenaming, "scan", after(digestB)},
		{PhaseRenaming, "set", after(digestB, digestC)},
	} {
		t.Run(string(tc.phase)+"/then "+tc.next, func(t *testing.T) {
			dir, jd := filetree.Write(t, files), t.TempDir()
			killedAt(t, dir, Update{Image: "nginx", Digest: digestB}, tc.phase, WithJournalDir(jd))
			if len(leftovers(t, dir)) == 0 || len(journalIn(t, jd)) != 1 {
				t.Fatalf("the kill left %d staged files and %d journals: the test did not stop Set mid-way", len(leftovers(t, dir)), len(journalIn(t, jd)))
			}
			var err error
			if tc.next == "scan" {
				_, err = Scan(dir, WithJournalDir(jd))
			} else {
				_, err = Set(dir, Update{Image: "nginx", Digest: digestC}, WithJournalDir(jd))
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readTree(t, dir)); diff != "" {
				t.Errorf("tree after the next run (-want +got):\n%s", diff)
			}
			if j := journalIn(t, jd); len(j) != 0 {
				t.Errorf("journal left after the next run: %q", j)
			}
		})
	}
}

// TestJournalRollsBackAMovedTree: a journal whose originals changed since
// they were staged (a git reset, another edit) is undone, not replayed
// over the newer content.
func TestJournalRollsBackAMovedTree(t *testing.T) {
	dir, jd := filetree.Write(t, map[string]string{
		"a.yaml": "image: nginx@" + digestA + "\n",
		"b.yaml": "image: nginx@" + digestA + "\n",
	}), t.TempDir()
	killedAt(t, dir, Update{Image: "nginx", Digest: digestB}, PhaseJournaled, WithJournalDir(jd))
	moved := "image: nginx@" + digestC + "\n# moved on\n"
	for _, f := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(moved), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	if _, err := Scan(dir, WithJournalDir(jd), WithWarnings(func(_ string, err error) { warned = append(warned, err.Error()) })); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.yaml": moved, "b.yaml": moved}
	if diff := cmp.Diff(want, readTree(t, dir)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "undone") {
		t.Errorf("warnings = %q, want one saying the interrupted set was undone", warned)
	}
}

// TestSetRollsBackWhenAReplaceFails: when one original cannot be replaced
// after others were, those go back: the tree ends as it was, with nothing
// staged and no journal, and the error says so. The failure is a file
// that became a directory mid-set, and a file made immutable (chattr
// +i), which defeats even root; the test needs chattr, root and a file
// system that keeps the flag (.ci/run installs chattr).
func TestSetRollsBackWhenAReplaceFails(t *testing.T) {
	files := map[string]string{
		"a.yaml": "image: nginx@" + digestA + "\n",
		"b.yaml": "image: nginx@" + digestA + "\n",
		"c.yaml": "image: nginx@" + digestA + "\n",
	}
	check := func(t *testing.T, dir, jd string, err error, wantTree map[string]string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "b.yaml") || !strings.Contains(err.Error(), "put back") {
			t.Errorf("Set = %v, want an error naming b.yaml and saying the replaced files were put back", err)
		}
		got := readTree(t, dir)
		if diff := cmp.Diff(wantTree, got); diff != "" {
			t.Errorf("tree (-want +got):\n%s", diff)
		}
		if j := journalIn(t, jd); len(j) != 0 {
			t.Errorf("journal left: %q", j)
		}
	}
	t.Run("a file became a directory", func(t *testing.T) {
		dir, jd := filetree.Write(t, files), t.TempDir()
		_, err := Set(dir, Update{Image: "nginx", Digest: digestB}, WithJournalDir(jd), WithPhaseHook(func(p Phase) {
			if p == PhaseRenaming { // a.yaml is replaced; b.yaml goes
				os.Remove(filepath.Join(dir, "b.yaml"))
				os.MkdirAll(filepath.Join(dir, "b.yaml", "x"), 0o755)
				os.WriteFile(filepath.Join(dir, "b.yaml", "x", "keep"), []byte("k"), 0o644)
			}
		}))
		want := map[string]string{"a.yaml": files["a.yaml"], "b.yaml/x/keep": "k", "c.yaml": files["c.yaml"]}
		check(t, dir, jd, err, want)
	})
	t.Run("an immutable file", func(t *testing.T) {
		dir, jd := filetree.Write(t, files), t.TempDir()
		b := filepath.Join(dir, "b.yaml")
		chattr, err := exec.LookPath("chattr")
		if err == nil {
			err = exec.Command(chattr, "+i", b).Run()
		}
		if err != nil {
			t.Fatalf("making %s immutable: %v (this test needs chattr, root, and a file system that keeps the flag)", b, err)
		}
		t.Cleanup(func() { exec.Command(chattr, "-i", b).Run() })
		_, err = Set(dir, Update{Image: "nginx", Digest: digestB}, WithJournalDir(jd))
		check(t, dir, jd, err, files)
	})
}

// TestHostileJournal: a journal pinbot did not write for the tree (planted
// by whoever can write to the journal directory, or left by another tree)
// is refused, naming it, and nothing in or outside the tree changes.
func TestHostileJournal(t *testing.T) {
	files := map[string]string{"a.yaml": "image: nginx@" + digestA + "\n"}
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	for name, tc := range map[string]struct {
		journal func(root string) journal
		link    bool
		want    string
	}{
		"a path outside the tree": {
			journal: func(root string) journal {
				rel, _ := filepath.Rel(root, victim)
				return journal{Version: 2, Root: root, Token: strings.Repeat("ab", 12), Phase: journalCommitting, Files: []journalEntry{{File: filepath.ToSlash(rel)}}}
			},
			want: "outside the tree",
		},
		"another tree's journal": {
			journal: func(string) journal {
				return journal{Version: 2, Root: outside, Token: strings.Repeat("ab", 12), Phase: journalCommitting}
			},
			want: "not of",
		},
		"no token": {
			journal: func(root string) journal { return journal{Version: 2, Root: root, Phase: journalCommitting} },
			want:    "no token",
		},
		"a link": {link: true, want: "not a regular file"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, jd := filetree.Write(t, files), t.TempDir()
			tr, err := openTree(dir)
			if err != nil {
				t.Fatal(err)
			}
			jf, err := journalFile(options{journalDir: jd}, tr)
			if err != nil {
				t.Fatal(err)
			}
			if tc.link {
				err = os.Symlink(victim, jf)
			} else {
				err = writeJournal(jf, tc.journal(tr.root))
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = Set(dir, Update{Image: "nginx", Digest: digestB}, WithJournalDir(jd))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), jf) {
				t.Errorf("Set = %v, want an error naming %s and saying %q", err, jf, tc.want)
			}
			if diff := cmp.Diff(files, readTree(t, dir)); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious" {
				t.Errorf("the file outside the tree was changed: %q", b)
			}
		})
	}
}

// TestJournalDirNotPrivate: a journal directory another user may write to
// is refused: whoever can write there could plant a journal.
func TestJournalDirNotPrivate(t *testing.T) {
	dir, jd := filetree.Write(t, map[string]string{"a.yaml": "image: nginx@" + digestA + "\n"}), t.TempDir()
	if err := os.Chmod(jd, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Set(dir, Update{Image: "nginx", Digest: digestB}, WithJournalDir(jd))
	if err == nil || !strings.Contains(err.Error(), jd) {
		t.Errorf("Set = %v, want an error naming the journal directory %s", err, jd)
	}
	if got := readTree(t, dir)["a.yaml"]; !strings.Contains(got, digestA) {
		t.Errorf("a.yaml was changed: %q", got)
	}
}

// TestStagedLookalikeIsTheRepositorys: a tracked file named like a staged
// file of Set (".a.yaml.pinbot-…") is the repository's: Set neither
// removes nor rewrites it.
func TestStagedLookalikeIsTheRepositorys(t *testing.T) {
	files := map[string]string{
		"a.yaml": "image: nginx@" + digestA + "\n",
		".a.yaml.pinbot-" + strings.Repeat("0", 24):          "notes\n",
		".a.yaml.pinbot-" + strings.Repeat("0", 24) + ".old": "older notes\n",
	}
	dir := filetree.Write(t, files)
	if _, err := Set(dir, Update{Image: "nginx", Digest: digestB}, WithJournalDir(t.TempDir())); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	for f, want := range files {
		if f != "a.yaml" && got[f] != want {
			t.Errorf("%s = %q, want %q", f, got[f], want)
		}
	}
}

// TestSetStopsWhenCancelled is the signal path: a context that ends while
// Set stages its files leaves the tree as it was, with no temporary file.
func TestSetStopsWhenCancelled(t *testing.T) {
	files := map[string]string{
		"a.yaml":     "image: nginx@" + digestA + "\n",
		"b/c.yaml":   "image: nginx@" + digestA + "\n",
		"Dockerfile": "FROM nginx@" + digestA + "\n",
	}
	dir := filetree.Write(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := SetContext(ctx, dir, Update{Image: "nginx", Digest: digestB}, WithPhaseHook(func(p Phase) {
		if p == PhaseStaged {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("SetContext = %v, want context.Canceled", err)
	}
	if diff := cmp.Diff(files, readTree(t, dir)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

// TestSetKeepsOwner: run as root, Set keeps a file's owner and group as
// well as its mode (nobody:nogroup stayed nobody:nogroup). Run as another
// user, the file is that user's already and stays so.
func TestSetKeepsOwner(t *testing.T) {
	dir := filetree.Write(t, map[string]string{"pod.yaml": "image: nginx@" + digestA + "\n"})
	p := filepath.Join(dir, "pod.yaml")
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 65534, 65534
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(dir, Update{Image: "nginx", Digest: digestB}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	got := []int{int(st.Uid), int(st.Gid), int(fi.Mode().Perm())}
	if diff := cmp.Diff([]int{uid, gid, 0o640}, got); diff != "" {
		t.Errorf("uid, gid, mode after Set (-want +got):\n%s", diff)
	}
}

// TestLargeFileSkipped: a file above MaxFileSize is neither parsed nor
// rewritten; Scan and Set warn about it and carry on with the rest.
func TestLargeFileSkipped(t *testing.T) {
	big := "image: nginx@" + digestA + "\n" + strings.Repeat("# padding padding padding\n", MaxFileSize/26+1)
	dir := filetree.Write(t, map[string]string{
		"big.yaml":   big,
		"small.yaml": "image: nginx@" + digestA + "\n",
	})
	var warned []string
	warn := WithWarnings(func(file string, err error) {
		if errors.Is(err, ErrTooLarge) {
			warned = append(warned, file)
		}
	})
	found, err := Scan(dir, warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].File != "small.yaml" {
		t.Errorf("Scan = %+v, want small.yaml's pin only", found)
	}
	changes, err := Set(dir, Update{Image: "nginx", Digest: digestB}, warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].File != "small.yaml" {
		t.Errorf("Set = %+v, want small.yaml changed only", changes)
	}
	if diff := cmp.Diff([]string{"big.yaml", "big.yaml"}, warned); diff != "" {
		t.Errorf("too-large warnings (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "big.yaml")); string(b) != big {
		t.Error("big.yaml was changed")
	}
}

// TestDirThatIsALinkToRoot: --dir pointing at / through a link, or / itself,
// is refused rather than walked.
func TestDirThatIsALinkToRoot(t *testing.T) {
	link := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{link: "symbolic link (to /)", "/": "refusing to walk the whole file system"} {
		done := make(chan error, 1)
		go func() { _, err := Scan(dir); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Scan(%s) = %v, want an error containing %q", dir, err, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Scan(%s) is walking the file system", dir)
		}
	}
}

// TestVendoredDirsSkipped: node_modules and vendor are skipped unless
// WithVendored.
func TestVendoredDirsSkipped(t *testing.T) {
	files := map[string]string{
		"app.yaml":                       "image: nginx@" + digestA + "\n",
		"node_modules/pkg/Dockerfile":    "FROM nginx@" + digestA + "\n",
		"vendor/github.com/x/chart.yaml": "image: nginx@" + digestA + "\n",
	}
	dir := filetree.Write(t, files)
	changes, err := Set(dir, Update{Image: "nginx", Digest: digestB})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].File != "app.yaml" {
		t.Errorf("Set = %+v, want app.yaml only", changes)
	}
	found, err := Scan(dir, WithVendored())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 {
		t.Errorf("Scan with WithVendored found %d pins, want 3", len(found))
	}
}

// TestWarningsOnce: two pins on one line that cannot be rewritten in place
// give one warning, not two.
func TestWarningsOnce(t *testing.T) {
	esc := `"sha256:\x61` + strings.Repeat("a", 63) + `"`
	dir := filetree.Write(t, map[string]string{
		"kustomization.yaml": "images: [{name: nginx, digest: " + esc + "}, {name: redis, digest: " + esc + "}]\n",
	})
	var got []string
	if _, err := Scan(dir, WithWarnings(func(f string, err error) { got = append(got, err.Error()) })); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("warnings = %q, want one", got)
	}
}
