package gitforge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// TestCheckoutCommit checks out an older commit of a branch on the real
// Gitea, then, in the same cache directory, one pushed since, and refuses
// a commit the branch does not hold.
func TestCheckoutCommit(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, first := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}
	w := clone(t, srv, repo, "main")
	writeFile(t, filepath.Join(w.Dir(), "f.yaml"), "v: 1\n")
	second, err := w.Commit("move", author)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctx, "main", false); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	read := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "f.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := gitforge.CheckoutCommit(ctx, url, "main", first, dir, auth); err != nil {
		t.Fatalf("CheckoutCommit of the first commit: %s", err)
	}
	if got := read(); got != "v: 0\n" {
		t.Errorf("first commit: f.yaml = %q, want v: 0", got)
	}
	writeFile(t, filepath.Join(dir, "stray.yaml"), "x: 1\n") // an untracked file goes
	writeFile(t, filepath.Join(w.Dir(), "f.yaml"), "v: 2\n")
	third, err := w.Commit("move again", author)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctx, "main", false); err != nil {
		t.Fatal(err)
	}
	if err := gitforge.CheckoutCommit(ctx, url, "main", third, dir, auth); err != nil {
		t.Fatalf("CheckoutCommit of a commit pushed since (fetched into the cache): %s", err)
	}
	if got := read(); got != "v: 2\n" {
		t.Errorf("third commit: f.yaml = %q, want v: 2", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray.yaml")); !os.IsNotExist(err) {
		t.Errorf("untracked file left behind: %v", err)
	}
	if err := gitforge.CheckoutCommit(ctx, url, "main", second, dir, auth); err != nil || read() != "v: 1\n" {
		t.Errorf("CheckoutCommit of the second commit: %v, f.yaml %q", err, read())
	}
	err = gitforge.CheckoutCommit(ctx, url, "main", strings.Repeat("1", 40), dir, auth)
	if !errors.Is(err, gitforge.ErrCommitNotFound) {
		t.Errorf("CheckoutCommit of an unknown commit = %v, want ErrCommitNotFound", err)
	}
}

// TestDefaultBranch reads the branch the remote's HEAD names, which is not
// always main.
func TestDefaultBranch(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.yaml"), "v: 0\n")
	repo := gitforge.Repo{Owner: srv.AdminUser, Name: giteatest.Name(t)}
	if _, err := srv.CreateRepoFromDir(ctx, repo.Owner, repo.Name, "trunk", dir); err != nil {
		t.Fatal(err)
	}
	auth := gitforge.Auth{Token: srv.Token}
	if got, err := gitforge.DefaultBranch(ctx, srv.RepoURL(repo.Owner, repo.Name), auth); err != nil || got != "trunk" {
		t.Errorf("DefaultBranch = %q, %v; want trunk", got, err)
	}
	if _, err := gitforge.DefaultBranch(ctx, srv.RepoURL(repo.Owner, repo.Name), gitforge.Auth{Token: "bad0token"}); !errors.Is(err, gitforge.ErrUnauthorized) {
		t.Errorf("DefaultBranch with a bad token = %v, want ErrUnauthorized", err)
	}
}
