package gitforge_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/confined"
)

// These tests run on a local bare repository (no Gitea), made and checked
// with the git CLI: the trees Edit writes must be the ones git writes,
// and a repository's links and large files must never be read through.

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

// localRemote commits the tree that build makes in a directory and
// returns a bare repository of it, by file URL.
func localRemote(t *testing.T, build func(dir string)) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git CLI is needed to check snapshots against git: %s", err)
	}
	src := t.TempDir()
	build(src)
	gitCLI(t, src, "init", "-q")
	gitCLI(t, src, "add", "-A")
	gitCLI(t, src, "commit", "-qm", "base")
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, src, "clone", "-q", "--bare", src, bare)
	return "file://" + bare
}

// hostile is a tree with an executable, links to a file, to a directory
// inside and to one outside (the parent of the repository), beside plain
// files.
func hostile(dir string) {
	for name, content := range map[string]string{
		"a.yaml":         "a: 1\n",
		"run.sh":         "#!/bin/sh\n",
		"dir/b.yaml":     "image: app@sha256:old\n",
		"dir/sub/c.yaml": "c: 3\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	os.Symlink("a.yaml", filepath.Join(dir, "link.yaml"))
	os.Symlink("dir", filepath.Join(dir, "dirlink"))
	os.Symlink("..", filepath.Join(dir, "up"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.yaml"))
}

func TestEditMatchesGit(t *testing.T) {
	url := localRemote(t, hostile)
	s := fetch(t, "", url, "main", gitforge.Auth{})
	e := edit(t, s, map[string]string{"dir/b.yaml": "image: app@sha256:new\n", "run.sh": "#!/bin/sh\nexit 0\n", "added/new.yaml": "n: 1\n"}, "edit\n")

	ref := t.TempDir()
	gitCLI(t, ref, "clone", "-q", url, ".")
	os.WriteFile(filepath.Join(ref, "dir/b.yaml"), []byte("image: app@sha256:new\n"), 0o644)
	os.WriteFile(filepath.Join(ref, "run.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	os.MkdirAll(filepath.Join(ref, "added"), 0o755)
	os.WriteFile(filepath.Join(ref, "added/new.yaml"), []byte("n: 1\n"), 0o644)
	gitCLI(t, ref, "add", "-A")
	gitCLI(t, ref, "commit", "-qm", "edit")

	// The pushed commit, fetched by git, has git's tree and the base as
	// its parent.
	bare := strings.TrimPrefix(url, "file://")
	if err := e.Push(t.Context(), "edited", false, gitforge.Auth{}); err != nil {
		t.Fatal(err)
	}
	got := []string{gitCLI(t, bare, "rev-parse", "edited^{tree}"), gitCLI(t, bare, "rev-parse", "edited^")}
	want := []string{gitCLI(t, ref, "rev-parse", "HEAD^{tree}"), s.Commit()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree and parent of the edit (-want +got):\n%s", diff)
	}
	if out := gitCLI(t, bare, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Errorf("git fsck: %s", out)
	}
}

// TestSnapshotFollowsNoLink: links are listed, never opened, never edited
// through; a walk enters none.
func TestSnapshotFollowsNoLink(t *testing.T) {
	s := fetch(t, "", localRemote(t, hostile), "main", gitforge.Auth{})
	for _, name := range []string{"link.yaml", "passwd.yaml", "up/etc/passwd", "dirlink/b.yaml", "up"} {
		if b, err := s.ReadFile(name); !errors.Is(err, confined.ErrLink) {
			t.Errorf("ReadFile(%s) = %q, %v; want ErrLink", name, b, err)
		}
	}
	var walked []string
	err := fs.WalkDir(s.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		walked = append(walked, p+":"+d.Type().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ".:d---------,a.yaml:----------,dir:d---------,dir/b.yaml:----------,dir/sub:d---------,dir/sub/c.yaml:----------,dirlink:L---------,link.yaml:L---------,passwd.yaml:L---------,run.sh:----------,up:L---------"
	if got := strings.Join(walked, ","); got != want {
		t.Errorf("walk =\n%s\nwant\n%s", got, want)
	}
	if fi, err := fs.Stat(s.FS(), "run.sh"); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh = %v, %v; want an executable", fi, err)
	}
	for _, name := range []string{"link.yaml", "dirlink/b.yaml", "up/x.yaml", "../x.yaml", ".git/config"} {
		if _, err := s.Edit(map[string][]byte{name: []byte("x")}, "through a link", author); err == nil {
			t.Errorf("Edit(%s) succeeded, want it refused", name)
		}
	}
}

// TestSnapshotBoundsReads: a blob over confined.MaxFile is refused, saying so
// through TooLarge, without being read.
func TestSnapshotBoundsReads(t *testing.T) {
	url := localRemote(t, func(dir string) {
		os.WriteFile(filepath.Join(dir, "small.yaml"), []byte("s: 1\n"), 0o644)
		f, _ := os.Create(filepath.Join(dir, "huge.yaml"))
		f.Truncate(confined.MaxFile + 1)
		f.Close()
	})
	s := fetch(t, "", url, "main", gitforge.Auth{})
	_, err := s.ReadFile("huge.yaml")
	var tl interface{ TooLarge() bool }
	if !errors.Is(err, confined.ErrTooLarge) || !errors.As(err, &tl) {
		t.Errorf("ReadFile(huge.yaml) = %v, want ErrTooLarge", err)
	}
	if b, err := s.ReadFile("small.yaml"); err != nil || string(b) != "s: 1\n" {
		t.Errorf("ReadFile(small.yaml) = %q, %v", b, err)
	}
}

// TestSnapshotHashIsGits: the FS names each entry by git's own object id
// (git rev-parse <commit>:<path>), a tree's covering all under it, and
// "" for a path the commit lacks.
func TestSnapshotHashIsGits(t *testing.T) {
	remote := localRemote(t, hostile)
	s := fetch(t, "", remote, "main", gitforge.Auth{})
	h, ok := s.FS().(interface{ Hash(string) string })
	if !ok {
		t.Fatal("the snapshot's FS does not name its objects")
	}
	bare := strings.TrimPrefix(remote, "file://")
	for _, name := range []string{"a.yaml", "dir", "dir/sub/c.yaml", "link.yaml"} {
		if got, want := h.Hash(name), gitCLI(t, bare, "rev-parse", "main:"+name); got != want {
			t.Errorf("Hash(%s) = %q, want git's %q", name, got, want)
		}
	}
	if got, want := h.Hash("."), gitCLI(t, bare, "rev-parse", "main^{tree}"); got != want {
		t.Errorf("Hash(.) = %q, want the root tree %q", got, want)
	}
	for _, name := range []string{"missing.yaml", "dir/missing", "dirlink/b.yaml", "../x"} {
		if got := h.Hash(name); got != "" {
			t.Errorf("Hash(%s) = %q, want none", name, got)
		}
	}
}
