package pins

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// crashImage copies the tree at dir, with modification times, as a killed
// process would leave it on disk.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(dst, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestSetCrashAtEachPhase takes the image a kill -9 would leave at each
// phase of a Set over many files, and checks that the next run converges:
// before the commit point to the old tree, after it to the new one, with no
// temporary file left either way. (cmd/pinbot kills the real process.)
func TestSetCrashAtEachPhase(t *testing.T) {
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
	oldTree := writeTree(t, files)
	newTree := writeTree(t, files)
	if _, err := Set(newTree, Update{Image: "nginx", Digest: digestB}); err != nil {
		t.Fatal(err)
	}
	scan := func(dir string) error { _, err := Scan(dir); return err }
	set := func(dir string) error {
		_, err := Set(dir, Update{Image: "nginx", Digest: digestC})
		return err
	}
	// What a later Set to digest C makes of the new tree.
	newerTree := crashImage(t, newTree)
	if _, err := Set(newerTree, Update{Image: "nginx", Digest: digestC}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		phase Phase
		next  string
		want  string // the tree after the next run
	}{
		{PhaseStaged, "scan", oldTree},
		{PhaseStaged, "set", ""}, // old tree set to C: compared below
		{PhaseJournaled, "scan", newTree},
		{PhaseJournaled, "set", newerTree},
		{PhaseRenaming, "scan", newTree},
		{PhaseRenaming, "set", newerTree},
	} {
		t.Run(string(tc.phase)+"/then "+tc.next, func(t *testing.T) {
			then := scan
			if tc.next == "set" {
				then = set
			}
			dir := writeTree(t, files)
			var image string
			_, err := Set(dir, Update{Image: "nginx", Digest: digestB}, WithPhaseHook(func(p Phase) {
				if p == tc.phase {
					image = crashImage(t, dir)
				}
			}))
			if err != nil || image == "" {
				t.Fatalf("Set: %v; crash image taken: %v", err, image != "")
			}
			if tc.phase == PhaseStaged {
				if temps := tempFiles(t, image); len(temps) != len(files) {
					t.Errorf("crash image holds %d temporary files, want %d", len(temps), len(files))
				}
			}
			if err := then(image); err != nil {
				t.Fatal(err)
			}
			got := readTree(t, image)
			if tc.next == "scan" {
				// Scan removes nothing; the temporary files wait for Set.
				for _, p := range tempFiles(t, image) {
					delete(got, p)
				}
			}
			want := tc.want
			if want == "" {
				want = crashImage(t, oldTree)
				if _, err := Set(want, Update{Image: "nginx", Digest: digestC}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.next == "set" {
				if temps := tempFiles(t, image); len(temps) != 0 {
					t.Errorf("temporary files left after the next Set: %q", temps)
				}
			}
			if diff := cmp.Diff(readTree(t, want), got); diff != "" {
				t.Errorf("tree after the next run (-want +got):\n%s", diff)
			}
		})
	}
}

// tempFiles lists the temporary files of Set under dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (isTempName(d.Name()) || d.Name() == JournalName) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	return out
}

// TestJournalRollsBackAMovedTree: a journal whose originals changed since
// they were staged (a git reset, another edit) is dropped, not replayed
// over the newer content.
func TestJournalRollsBackAMovedTree(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": "image: nginx@" + digestA + "\n",
		"b.yaml": "image: nginx@" + digestA + "\n",
	})
	var image string
	if _, err := Set(dir, Update{Image: "nginx", Digest: digestB}, WithPhaseHook(func(p Phase) {
		if p == PhaseJournaled {
			image = crashImage(t, dir)
		}
	})); err != nil {
		t.Fatal(err)
	}
	moved := "image: nginx@" + digestC + "\n# moved on\n"
	for _, f := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(image, f), []byte(moved), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	if _, err := Scan(image, WithWarnings(func(_ string, err error) { warned = append(warned, err.Error()) })); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.yaml": moved, "b.yaml": moved}
	if diff := cmp.Diff(want, readTree(t, image)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "dropped") {
		t.Errorf("warnings = %q, want one saying the interrupted set was dropped", warned)
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
	dir := writeTree(t, files)
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
	dir := writeTree(t, map[string]string{"pod.yaml": "image: nginx@" + digestA + "\n"})
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
	dir := writeTree(t, map[string]string{
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
	dir := writeTree(t, files)
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
	dir := writeTree(t, map[string]string{
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

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		".pod.yaml.pinbot-123456":       true,
		".pinbot-journal.pinbot-1":      true,
		".pinbot-journal":               false,
		"pod.yaml.pinbot-123":           false,
		".pod.yaml.pinbot-":             false,
		".pod.yaml.pinbot-12a":          false,
		".notes.pinbot-draft":           false,
		".Dockerfile.pinbot-9876543210": true,
	} {
		if got := isTempName(name); got != want {
			t.Errorf("isTempName(%q) = %v, want %v", name, got, want)
		}
	}
}
