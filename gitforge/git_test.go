package gitforge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

func TestMain(m *testing.M) { giteatest.Main(m, gitea.Options{}) }

var author = gitforge.Signature{Name: "pinbot", Email: "pinbot@example.com"}

// newRepo creates a repository of the admin holding files on main and
// returns it with the commit on main.
func newRepo(t *testing.T, srv *gitea.Server, files map[string]string) (gitforge.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	repo := gitforge.Repo{Owner: srv.AdminUser, Name: giteatest.Name(t)}
	sha, err := srv.CreateRepoFromDir(context.Background(), repo.Owner, repo.Name, "main", dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo, sha
}

func clone(t *testing.T, srv *gitea.Server, repo gitforge.Repo, branch string) *gitforge.Worktree {
	t.Helper()
	w, err := gitforge.Clone(context.Background(), srv.RepoURL(repo.Owner, repo.Name), branch, t.TempDir(), gitforge.Auth{Token: srv.Token})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestCloneCommitPush(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, base := newRepo(t, srv, map[string]string{
		"keep.yaml":       "a: 1\n",
		"change.yaml":     "image: app@sha256:old\n",
		"gone/drop.yaml":  "b: 2\n",
		"deep/er/x.yaml":  "c: 3\n",
		"deep/er/y.yaml":  "d: 4\n",
		"deep/other.yaml": "e: 5\n",
	})
	w := clone(t, srv, repo, "main")
	if w.Head() != base {
		t.Errorf("Head = %s, want %s", w.Head(), base)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), ".git", "shallow")); err != nil {
		t.Errorf("clone is not shallow: %s", err)
	}

	writeFile(t, filepath.Join(w.Dir(), "change.yaml"), "image: app@sha256:new\n")
	writeFile(t, filepath.Join(w.Dir(), "added/new.yaml"), "f: 6\n")
	if err := os.RemoveAll(filepath.Join(w.Dir(), "gone")); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sha, err := w.Commit("Promote app\n\nPinbot-Digest: sha256:new\n", gitforge.Signature{Name: "pinbot", Email: "pinbot@example.com", When: when})
	if err != nil {
		t.Fatal(err)
	}
	if w.Head() != sha {
		t.Errorf("Head after Commit = %s, want %s", w.Head(), sha)
	}
	if _, err := w.Commit("again", author); !errors.Is(err, gitforge.ErrNoChanges) {
		t.Errorf("Commit with a clean tree = %v, want ErrNoChanges", err)
	}
	if err := w.Push(ctx, "pinbot/app", false); err != nil {
		t.Fatal(err)
	}
	// Pushing the same commit again is not an error.
	if err := w.Push(ctx, "pinbot/app", false); err != nil {
		t.Errorf("second identical Push: %s", err)
	}

	c, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := c.GetSingleCommit(repo.Owner, repo.Name, "pinbot/app")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{commit.SHA, commit.RepoCommit.Message, commit.RepoCommit.Author.Name, commit.RepoCommit.Author.Date, len(commit.Parents)}
	want := []any{sha, "Promote app\n\nPinbot-Digest: sha256:new\n", "pinbot", "2026-01-02T03:04:05Z", 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pushed commit (-want +got):\n%s", diff)
	}
	var files []string
	for _, f := range commit.Files {
		files = append(files, f.Filename)
	}
	sort.Strings(files)
	if diff := cmp.Diff([]string{"added/new.yaml", "change.yaml", "gone/drop.yaml"}, files); diff != "" {
		t.Errorf("files changed by the commit (-want +got):\n%s", diff)
	}
	if _, _, err := c.GetFile(repo.Owner, repo.Name, "pinbot/app", "gone/drop.yaml"); err == nil {
		t.Error("deleted file still on the pushed branch")
	}
}

// TestPushRejected checks that a non-forced push that is not a
// fast-forward fails with ErrPushRejected (so callers retry), that a forced
// push replaces the branch, and that a fast-forward push to the base
// branch works from a shallow clone.
func TestPushRejected(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})

	first := clone(t, srv, repo, "main")
	writeFile(t, filepath.Join(first.Dir(), "f.yaml"), "v: 1\n")
	if _, err := first.Commit("one", author); err != nil {
		t.Fatal(err)
	}
	if err := first.Push(ctx, "pinbot/f", true); err != nil {
		t.Fatal(err)
	}

	second := clone(t, srv, repo, "main")
	writeFile(t, filepath.Join(second.Dir(), "f.yaml"), "v: 2\n")
	sha2, err := second.Commit("two", author)
	if err != nil {
		t.Fatal(err)
	}
	err = second.Push(ctx, "pinbot/f", false)
	if !errors.Is(err, gitforge.ErrPushRejected) {
		t.Fatalf("non-fast-forward Push = %v, want ErrPushRejected", err)
	}
	t.Logf("non-fast-forward push: %s", err)
	if err := second.Push(ctx, "pinbot/f", true); err != nil {
		t.Fatalf("forced Push: %s", err)
	}
	if got := branchSHA(t, srv, repo, "pinbot/f"); got != sha2 {
		t.Errorf("pinbot/f = %s after the forced push, want %s", got, sha2)
	}

	// Fast-forward of the base branch, from the shallow clone.
	if err := second.Push(ctx, "main", false); err != nil {
		t.Fatalf("fast-forward Push to main: %s", err)
	}
	if got := branchSHA(t, srv, repo, "main"); got != sha2 {
		t.Errorf("main = %s, want %s", got, sha2)
	}
	// The first clone's base is now stale: its push to main must be refused.
	if err := first.Push(ctx, "main", false); !errors.Is(err, gitforge.ErrPushRejected) {
		t.Errorf("stale Push to main = %v, want ErrPushRejected", err)
	} else {
		t.Logf("stale push: %s", err)
	}
}

func TestFetch(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	w := clone(t, srv, repo, "main")

	// The remote moves on; locally there is a commit and an untracked file.
	other := clone(t, srv, repo, "main")
	writeFile(t, filepath.Join(other.Dir(), "f.yaml"), "v: remote\n")
	remote, err := other.Commit("remote", author)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Push(ctx, "main", false); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w.Dir(), "f.yaml"), "v: local\n")
	if _, err := w.Commit("local", author); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w.Dir(), "untracked.txt"), "x\n")

	got, err := w.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != remote || w.Head() != remote {
		t.Errorf("Fetch = %s, Head = %s, want %s", got, w.Head(), remote)
	}
	if diff := cmp.Diff("v: remote\n", readFile(t, filepath.Join(w.Dir(), "f.yaml"))); diff != "" {
		t.Errorf("f.yaml after Fetch (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "untracked.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("untracked file survived Fetch: %v", err)
	}
	// Fetch with nothing new is fine and keeps the head.
	if got, err := w.Fetch(ctx); err != nil || got != remote {
		t.Errorf("second Fetch = %s, %v; want %s", got, err, remote)
	}
}

// TestCloneCache checks that Clone into a directory that already holds the
// clone updates it in place (the reconciler keeps one on disk).
func TestCloneCache(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}
	dir := t.TempDir()
	if _, err := gitforge.Clone(ctx, url, "main", dir, auth); err != nil {
		t.Fatal(err)
	}
	other := clone(t, srv, repo, "main")
	writeFile(t, filepath.Join(other.Dir(), "f.yaml"), "v: 1\n")
	moved, err := other.Commit("move", author)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Push(ctx, "main", false); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "f.yaml"), "dirty\n")

	w, err := gitforge.Clone(ctx, url, "main", dir, auth)
	if err != nil {
		t.Fatalf("Clone into the cached clone: %s", err)
	}
	if w.Head() != moved {
		t.Errorf("Head = %s, want the moved main %s", w.Head(), moved)
	}
	if diff := cmp.Diff("v: 1\n", readFile(t, filepath.Join(dir, "f.yaml"))); diff != "" {
		t.Errorf("f.yaml (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ name, url, dir string }{
		{"another remote in the cache", srv.RepoURL(repo.Owner, "other"), dir},
		{"a non-empty dir without a clone", url, nonEmptyDir(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := gitforge.Clone(ctx, tc.url, "main", tc.dir, auth); err == nil {
				t.Error("Clone succeeded, want an error")
			}
		})
	}
}

func TestCloneErrors(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	const badToken = "bad0token0that0must0not0leak"
	for _, tc := range []struct {
		name   string
		url    string
		branch string
		auth   gitforge.Auth
		is     error
		want   string
	}{
		{name: "missing branch", url: url, branch: "nope", auth: gitforge.Auth{Token: srv.Token}, is: gitforge.ErrBranchNotFound},
		{name: "invalid token", url: url, branch: "main", auth: gitforge.Auth{Token: badToken}, is: gitforge.ErrUnauthorized, want: "rejected the token"},
		{name: "missing repository", url: srv.RepoURL(repo.Owner, "missing"), branch: "main", auth: gitforge.Auth{Token: srv.Token}, want: "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := gitforge.Clone(ctx, tc.url, tc.branch, dir, tc.auth)
			if err == nil {
				t.Fatal("Clone succeeded, want an error")
			}
			t.Logf("Clone: %s", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Clone = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Errorf("Clone = %q, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), badToken) || strings.Contains(err.Error(), srv.Token) {
				t.Errorf("error leaks the token: %s", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("failed Clone left %d entries in %s", len(entries), dir)
			}
		})
	}
}

// TestTLS clones and calls the API over HTTPS with Gitea's self-signed
// certificate trusted through a CA bundle, and fails without it.
func TestTLS(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{TLS: true})
	ctx := context.Background()
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("repo URL %s is not https", url)
	}

	w, err := gitforge.Clone(ctx, url, "main", t.TempDir(), gitforge.Auth{Token: srv.Token, CAFile: srv.CAFile})
	if err != nil {
		t.Fatalf("Clone with the CA bundle: %s", err)
	}
	if w.Head() != sha {
		t.Errorf("Head = %s, want %s", w.Head(), sha)
	}
	writeFile(t, filepath.Join(w.Dir(), "f.yaml"), "v: 1\n")
	if _, err := w.Commit("tls", author); err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctx, "pinbot/tls", false); err != nil {
		t.Fatalf("Push over TLS: %s", err)
	}
	if _, err := gitforge.Clone(ctx, url, "main", t.TempDir(), gitforge.Auth{Token: srv.Token}); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("Clone without the CA bundle = %v, want a certificate error", err)
	}

	if head, err := gitforge.RemoteHead(ctx, url, "pinbot/tls", gitforge.Auth{Token: srv.Token, CAFile: srv.CAFile}); err != nil || head != w.Head() {
		t.Errorf("RemoteHead with the CA bundle = %s, %v; want %s", head, err, w.Head())
	}
	if _, err := gitforge.RemoteHead(ctx, url, "main", gitforge.Auth{Token: srv.Token}); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("RemoteHead without the CA bundle = %v, want a certificate error", err)
	}

	g, err := gitforge.NewGitea(srv.URL, srv.Token, gitforge.WithCAFile(srv.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if branch, err := g.DefaultBranch(ctx, repo); err != nil || branch != "main" {
		t.Errorf("DefaultBranch over TLS = %q, %v; want main", branch, err)
	}
	untrusting, err := gitforge.NewGitea(srv.URL, srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.DefaultBranch(ctx, repo); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("DefaultBranch without the CA = %v, want a certificate error", err)
	}
}

func branchSHA(t *testing.T, srv *gitea.Server, repo gitforge.Repo, branch string) string {
	t.Helper()
	c, err := srv.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := c.GetRepoBranch(repo.Owner, repo.Name, branch)
	if err != nil {
		t.Fatalf("reading branch %s: %s", branch, err)
	}
	return b.Commit.ID
}

func nonEmptyDir(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "precious.txt"), "keep me\n")
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
