package gitforge_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
)

// These tests run on a local bare repository (no Gitea) and check the clone
// cache's commit and reset against the git CLI: the tree Commit writes must
// be the one `git add -A && git commit` writes, and after Commit or Fetch
// `git status` must find nothing, so the index is right too.

func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %s\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// localRemote makes a bare repository holding files on main and returns
// its file URL.
func localRemote(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git CLI is needed to check the clone against git: %s", err)
	}
	src := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(src, name), content)
	}
	if err := os.Chmod(filepath.Join(src, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.yaml", filepath.Join(src, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, src, "init", "-q")
	gitCLI(t, src, "add", "-A")
	gitCLI(t, src, "commit", "-qm", "base")
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, src, "clone", "-q", "--bare", src, bare)
	return "file://" + bare
}

var localFiles = map[string]string{
	"a.yaml":           "a: 1\n",
	"run.sh":           "#!/bin/sh\n",
	"dir/b.yaml":       "image: app@sha256:old\n",
	"dir/sub/c.yaml":   "c: 3\n",
	"dir/sub/d.yaml":   "d: 4\n",
	"other/deep/e.txt": "e\n",
}

// edit changes a working copy: a same-size rewrite, a deletion that empties
// a directory, an added file in a new directory, a mode change.
func edit(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "dir/b.yaml"), "image: app@sha256:new\n")
	for _, gone := range []string{"dir/sub/c.yaml", "dir/sub/d.yaml"} {
		if err := os.Remove(filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "added/new.yaml"), "f: 6\n")
	if err := os.Chmod(filepath.Join(dir, "a.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestCommitMatchesGit(t *testing.T) {
	ctx := context.Background()
	url := localRemote(t, localFiles)
	w, err := gitforge.Clone(ctx, url, "main", t.TempDir(), gitforge.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	base := w.Head()
	edit(t, w.Dir())
	sha, err := w.Commit("edit\n", author)
	if err != nil {
		t.Fatal(err)
	}

	ref := t.TempDir()
	gitCLI(t, ref, "clone", "-q", url, ".")
	edit(t, ref)
	gitCLI(t, ref, "add", "-A")
	gitCLI(t, ref, "commit", "-qm", "edit")

	got := []string{gitCLI(t, w.Dir(), "rev-parse", sha+"^{tree}"), gitCLI(t, w.Dir(), "rev-parse", sha+"^"), gitCLI(t, w.Dir(), "status", "--porcelain")}
	want := []string{gitCLI(t, ref, "rev-parse", "HEAD^{tree}"), base, ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree, parent and git status after Commit (-want +got):\n%s", diff)
	}
	if w.Head() != sha || gitCLI(t, w.Dir(), "rev-parse", "HEAD") != sha {
		t.Errorf("HEAD after Commit is not %s", sha)
	}
	if _, err := w.Commit("again\n", author); !errors.Is(err, gitforge.ErrNoChanges) {
		t.Errorf("Commit with nothing changed = %v, want ErrNoChanges", err)
	}
	// A file touched without a change is no change either.
	now := time.Now().Add(time.Second)
	if err := os.Chtimes(filepath.Join(w.Dir(), "other/deep/e.txt"), now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit("touched\n", author); !errors.Is(err, gitforge.ErrNoChanges) {
		t.Errorf("Commit after touching a file = %v, want ErrNoChanges", err)
	}
}

func TestFetchResetsLikeGit(t *testing.T) {
	ctx := context.Background()
	url := localRemote(t, localFiles)
	dir := t.TempDir()
	w, err := gitforge.Clone(ctx, url, "main", dir, gitforge.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	// A local commit, then local mess: an in-place same-size edit, a
	// removed file, untracked files and directories, a file where a
	// directory was.
	edit(t, dir)
	if _, err := w.Commit("local\n", author); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), "a: 9\n")
	if err := os.Remove(filepath.Join(dir, "run.sh")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "untracked.txt"), "x\n")
	writeFile(t, filepath.Join(dir, "junk/deeper/y.txt"), "y\n")
	if err := os.RemoveAll(filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "other"), "not a directory\n")

	// Meanwhile the remote moves on.
	up := t.TempDir()
	gitCLI(t, up, "clone", "-q", url, ".")
	writeFile(t, filepath.Join(up, "dir/sub/c.yaml"), "c: remote\n")
	writeFile(t, filepath.Join(up, "remote/new.yaml"), "r: 1\n")
	if err := os.Remove(filepath.Join(up, "dir/sub/d.yaml")); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, up, "add", "-A")
	gitCLI(t, up, "commit", "-qm", "remote")
	gitCLI(t, up, "push", "-q", "origin", "main")
	remote := gitCLI(t, up, "rev-parse", "HEAD")

	// Reopening the cache fetches and resets, as a new process would.
	w, err = gitforge.Clone(ctx, url, "main", dir, gitforge.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{w.Head(), gitCLI(t, dir, "rev-parse", "HEAD"), gitCLI(t, dir, "status", "--porcelain", "--untracked-files=all"), listFiles(t, dir)}
	want := []string{remote, remote, "", listFiles(t, up)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("head, HEAD, git status and files after Fetch (-want +got):\n%s", diff)
	}
	for _, f := range []string{"a.yaml", "dir/sub/c.yaml", "dir/b.yaml", "link.yaml"} {
		if diff := cmp.Diff(readFile(t, filepath.Join(up, f)), readFile(t, filepath.Join(dir, f))); diff != "" {
			t.Errorf("%s after Fetch (-want +got):\n%s", f, diff)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh after Fetch: %v, %v; want it back, executable", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "link.yaml")); err != nil || target != "a.yaml" {
		t.Errorf("link.yaml after Fetch = %q, %v; want a link to a.yaml", target, err)
	}
}

// listFiles lists the files and links under dir, outside .git, with their
// kind.
func listFiles(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			out = append(out, rel+" "+d.Type().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}
