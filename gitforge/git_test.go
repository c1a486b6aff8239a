package gitforge_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/filetree"
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
		filetree.WriteFile(t, filepath.Join(dir, name), content)
	}
	repo := gitforge.Repo{Owner: srv.AdminUser, Name: giteatest.Name(t)}
	sha, err := srv.CreateRepoFromDir(context.Background(), repo.Owner, repo.Name, "main", dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo, sha
}

// fetch fetches branch of url into a cache (in memory when dir is "").
func fetch(t *testing.T, dir, url, branch string, auth gitforge.Auth) *gitforge.Snapshot {
	t.Helper()
	c, err := gitforge.NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Repository(url)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Fetch(context.Background(), branch, auth)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func edit(t *testing.T, s *gitforge.Snapshot, files map[string]string, msg string) *gitforge.Snapshot {
	t.Helper()
	changes := map[string][]byte{}
	for p, c := range files {
		changes[p] = []byte(c)
	}
	e, err := s.Edit(changes, msg, author)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFetchEditPush reads a branch from the real Gitea, commits a change
// and an added file on top of it without a checkout, pushes that to a new
// branch, and reads it back through a fresh cache.
func TestFetchEditPush(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n", "dir/g.yaml": "g: 0\n", "dir/sub/h.yaml": "h: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}

	s := fetch(t, "", url, "main", auth)
	if s.Commit() != sha {
		t.Fatalf("Commit = %s, want %s", s.Commit(), sha)
	}
	if err := fstest.TestFS(s.FS(), "f.yaml", "dir/g.yaml", "dir/sub/h.yaml"); err != nil {
		t.Fatal(err)
	}
	e := edit(t, s, map[string]string{"dir/sub/h.yaml": "h: 1\n", "new/deep/n.yaml": "n: 1\n"}, "change h, add n\n")
	if err := e.Push(ctx, "pinbot/test", false, auth); err != nil {
		t.Fatal(err)
	}
	if got := branchSHA(t, srv, repo, "pinbot/test"); got != e.Commit() {
		t.Fatalf("branch = %s, want the pushed %s", got, e.Commit())
	}
	back := fetch(t, "", url, "pinbot/test", auth)
	got := map[string]string{}
	fs.WalkDir(back.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := fs.ReadFile(back.FS(), p)
			got[p] = string(b)
		}
		return err
	})
	want := map[string]string{"f.yaml": "v: 0\n", "dir/g.yaml": "g: 0\n", "dir/sub/h.yaml": "h: 1\n", "new/deep/n.yaml": "n: 1\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files of the pushed branch (-want +got):\n%s", diff)
	}
	// Pushing it again is no error; an edit that changes nothing is.
	if err := e.Push(ctx, "pinbot/test", false, auth); err != nil {
		t.Errorf("pushing the same commit again: %v", err)
	}
	if _, err := s.Edit(map[string][]byte{"f.yaml": []byte("v: 0\n")}, "nothing", author); !errors.Is(err, gitforge.ErrNoChanges) {
		t.Errorf("Edit that changes nothing = %v, want ErrNoChanges", err)
	}
}

// TestPushRejected: a push that is not a fast-forward of what the branch
// holds is ErrPushRejected, unless forced.
func TestPushRejected(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}
	base := fetch(t, "", url, "main", auth)
	first := edit(t, base, map[string]string{"f.yaml": "v: 1\n"}, "first")
	second := edit(t, base, map[string]string{"f.yaml": "v: 2\n"}, "second")
	if err := first.Push(ctx, "main", false, auth); err != nil {
		t.Fatal(err)
	}
	if err := second.Push(ctx, "main", false, auth); !errors.Is(err, gitforge.ErrPushRejected) {
		t.Fatalf("second Push = %v, want ErrPushRejected", err)
	}
	if got := branchSHA(t, srv, repo, "main"); got != first.Commit() {
		t.Errorf("main = %s after the rejected push, want %s", got, first.Commit())
	}
	if err := second.Push(ctx, "main", true, auth); err != nil {
		t.Fatalf("forced Push: %v", err)
	}
	if got := branchSHA(t, srv, repo, "main"); got != second.Commit() {
		t.Errorf("main = %s after the forced push, want %s", got, second.Commit())
	}
}

// TestDeleteBranchAtItsHead: a branch is deleted only while it is at the
// head given (a lease); one moved since is kept and ErrPushRejected; one
// gone already is no error.
func TestDeleteBranchAtItsHead(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}
	base := fetch(t, "", url, "main", auth)
	readied := edit(t, base, map[string]string{"f.yaml": "v: 1\n"}, "readied")
	moved := edit(t, readied, map[string]string{"f.yaml": "v: 2\n"}, "moved")
	for _, s := range []*gitforge.Snapshot{readied, moved} {
		if err := s.Push(ctx, "pinbot/rollback", false, auth); err != nil {
			t.Fatal(err)
		}
	}
	if err := gitforge.DeleteBranch(ctx, url, "pinbot/rollback", readied.Commit(), auth); !errors.Is(err, gitforge.ErrPushRejected) {
		t.Fatalf("deleting a branch moved past the lease = %v, want ErrPushRejected", err)
	}
	if got := branchSHA(t, srv, repo, "pinbot/rollback"); got != moved.Commit() {
		t.Fatalf("the moved branch = %q, want it kept at %s", got, moved.Commit())
	}
	if err := gitforge.DeleteBranch(ctx, url, "pinbot/rollback", moved.Commit(), auth); err != nil {
		t.Fatal(err)
	}
	if heads, err := gitforge.RemoteHeads(ctx, url, auth, "pinbot/rollback"); err != nil || heads["pinbot/rollback"] != "" {
		t.Errorf("after the delete: %v, %v; want the branch gone", heads, err)
	}
	if err := gitforge.DeleteBranch(ctx, url, "pinbot/rollback", moved.Commit(), auth); err != nil {
		t.Errorf("deleting a branch gone already = %v", err)
	}
}

// TestWarmFetchIsIncremental: a cache on disk, reopened as a new process
// would, fetches only the objects of what changed since its head: one
// commit, the trees on the changed path and the changed blob, not the
// other 200 files; and nothing when nothing changed.
func TestWarmFetchIsIncremental(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	files := map[string]string{}
	for i := range 200 {
		files[filepath.Join("apps", string(rune('a'+i%20)), strings.Repeat("x", i%7+1)+".yaml")] = strings.Repeat("line\n", i)
	}
	files["apps/a/x.yaml"] = "image: app@sha256:old\n"
	repo, _ := newRepo(t, srv, files)
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}
	cache := t.TempDir()
	fetch(t, cache, url, "main", auth)
	moved, err := srv.Commit(ctx, repo.Owner, repo.Name, "main", "main", map[string]string{"apps/a/x.yaml": "image: app@sha256:new\n"}, "move")
	if err != nil {
		t.Fatal(err)
	}
	before := storeObjects(t, cache)
	s := fetch(t, cache, url, "main", auth)
	if s.Commit() != moved {
		t.Fatalf("warm Fetch = %s, want %s", s.Commit(), moved)
	}
	if b, _ := s.ReadFile("apps/a/x.yaml"); string(b) != "image: app@sha256:new\n" {
		t.Errorf("apps/a/x.yaml = %q", b)
	}
	// The commit, the root, apps and apps/a trees, the blob.
	if got := storeObjects(t, cache) - before; got == 0 || got > 5 {
		t.Errorf("the warm fetch stored %d objects, want at most 5", got)
	}
	after := storeObjects(t, cache)
	fetch(t, cache, url, "main", auth)
	if got := storeObjects(t, cache) - after; got != 0 {
		t.Errorf("a fetch with nothing new stored %d objects", got)
	}
}

// storeObjects counts the objects of the cache's stores, loose and packed,
// with the git CLI's help for the packs.
func storeObjects(t *testing.T, cache string) int {
	t.Helper()
	loose, _ := filepath.Glob(filepath.Join(cache, "git", "*.git", "objects", "[0-9a-f][0-9a-f]", "*"))
	packs, _ := filepath.Glob(filepath.Join(cache, "git", "*.git", "objects", "pack", "*.pack"))
	n := len(loose)
	for _, p := range packs {
		n += packObjects(t, p)
	}
	return n
}

// packObjects counts the objects of a pack with the git CLI.
func packObjects(t *testing.T, pack string) int {
	t.Helper()
	out, err := exec.Command("git", "verify-pack", "-v", strings.TrimSuffix(pack, ".pack")+".idx").CombinedOutput()
	if err != nil {
		t.Fatalf("git verify-pack: %v\n%s", err, out)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && len(f[0]) == 40 {
			n++
		}
	}
	return n
}

// TestFetchCommit reads an older commit of a branch after a shallow fetch
// of its head, deepening as needed; a commit not in the history is
// ErrCommitNotFound.
func TestFetchCommit(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, first := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}
	for i := 1; i <= 3; i++ {
		if _, err := srv.Commit(ctx, repo.Owner, repo.Name, "main", "main", map[string]string{"f.yaml": "v: " + string(rune('0'+i)) + "\n"}, "move"); err != nil {
			t.Fatal(err)
		}
	}
	c, err := gitforge.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Repository(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fetch(ctx, "main", auth); err != nil {
		t.Fatal(err)
	}
	s, err := r.FetchCommit(ctx, "main", first, auth)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadFile("f.yaml"); err != nil || string(b) != "v: 0\n" {
		t.Errorf("f.yaml at the first commit = %q, %v", b, err)
	}
	if _, err := r.FetchCommit(ctx, "main", strings.Repeat("ab", 20), auth); !errors.Is(err, gitforge.ErrCommitNotFound) {
		t.Errorf("FetchCommit of an unknown commit = %v, want ErrCommitNotFound", err)
	}
}

func TestFetchErrors(t *testing.T) {
	srv := giteatest.Server(t)
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
			c, _ := gitforge.NewCache("")
			r, err := c.Repository(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Fetch(context.Background(), tc.branch, tc.auth)
			if err == nil {
				t.Fatal("Fetch succeeded, want an error")
			}
			t.Logf("Fetch: %s", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Fetch = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Errorf("Fetch = %q, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), badToken) || strings.Contains(err.Error(), srv.Token) {
				t.Errorf("error leaks the token: %s", err)
			}
		})
	}
}

// TestCacheIsPrivate: a cache directory another user may write to is
// refused.
func TestCacheIsPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := gitforge.NewCache(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("NewCache of a world-writable directory = %v, want an error naming it", err)
	}
}

// TestTLS fetches, pushes and calls the API over HTTPS with Gitea's
// self-signed certificate trusted through a CA bundle, and fails without
// it.
func TestTLS(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{TLS: true})
	ctx := context.Background()
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("repo URL %s is not https", url)
	}
	auth := gitforge.Auth{Token: srv.Token, CAFile: srv.CAFile}
	s := fetch(t, "", url, "main", auth)
	if s.Commit() != sha {
		t.Errorf("Commit = %s, want %s", s.Commit(), sha)
	}
	e := edit(t, s, map[string]string{"f.yaml": "v: 1\n"}, "tls")
	if err := e.Push(ctx, "pinbot/tls", false, auth); err != nil {
		t.Fatalf("Push over TLS: %s", err)
	}
	c, _ := gitforge.NewCache("")
	r, _ := c.Repository(url)
	if _, err := r.Fetch(ctx, "main", gitforge.Auth{Token: srv.Token}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Fetch without the CA bundle = %v, want a certificate error", err)
	}
	if head, err := gitforge.RemoteHead(ctx, url, "pinbot/tls", auth); err != nil || head != e.Commit() {
		t.Errorf("RemoteHead with the CA bundle = %s, %v; want %s", head, err, e.Commit())
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
