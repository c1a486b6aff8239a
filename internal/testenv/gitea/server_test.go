package gitea_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

func TestMain(m *testing.M) { giteatest.Main(m, gitea.Options{}) }

func TestServer(t *testing.T) {
	srv := giteatest.Server(t)
	t.Logf("Gitea %s at %s started in %s", srv.Version, srv.URL, srv.Started)
	if srv.Version != "1.26.0" {
		t.Errorf("Version = %q, want 1.26.0 (built with -X main.Version)", srv.Version)
	}
	c, err := srv.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	me, _, err := c.GetMyUserInfo()
	if err != nil {
		t.Fatalf("token rejected: %s", err)
	}
	if diff := cmp.Diff([]any{srv.AdminUser, true}, []any{me.UserName, me.IsAdmin}); diff != "" {
		t.Errorf("token's user (-want +got):\n%s", diff)
	}
	if want := strings.TrimPrefix(srv.URL, "http://"); srv.RegistryHost != want {
		t.Errorf("RegistryHost = %q, want %q", srv.RegistryHost, want)
	}
}

func TestCreateRepoFromDir(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{
		"README.md":               "hello\n",
		"envs/staging/app.yaml":   "image: example/app@sha256:aa\n",
		"envs/prod/nested/a.yaml": "x: 1\n",
	}
	for name, content := range files {
		filetree.WriteFile(t, filepath.Join(dir, name), content)
	}
	org := giteatest.Name(t)
	if err := srv.CreateOrg(ctx, org); err != nil {
		t.Fatal(err)
	}
	sha, err := srv.CreateRepoFromDir(ctx, org, "manifests", "main", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PushDir wrote .git into the source dir: %v", err)
	}

	c, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	repo, _, err := c.GetRepo(org, "manifests")
	if err != nil {
		t.Fatal(err)
	}
	if repo.DefaultBranch != "main" {
		t.Errorf("default branch = %q, want main", repo.DefaultBranch)
	}
	branch, _, err := c.GetRepoBranch(org, "manifests", "main")
	if err != nil {
		t.Fatal(err)
	}
	if branch.Commit.ID != sha {
		t.Errorf("main = %s, want the pushed commit %s", branch.Commit.ID, sha)
	}
	for name, want := range files {
		got, _, err := c.GetFile(org, "manifests", "main", name)
		if err != nil {
			t.Errorf("reading %s: %s", name, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestMergePull(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	name := giteatest.Name(t)
	dir := t.TempDir()
	filetree.WriteFile(t, filepath.Join(dir, "a.txt"), "one\n")
	if _, err := srv.CreateRepoFromDir(ctx, srv.AdminUser, name, "main", dir); err != nil {
		t.Fatal(err)
	}
	filetree.WriteFile(t, filepath.Join(dir, "a.txt"), "two\n")
	if _, err := srv.PushDir(ctx, srv.AdminUser, name, "feature", dir, "two"); err != nil {
		t.Fatal(err)
	}
	c, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// PushDir makes parentless commits, which Gitea refuses to merge
	// ("unrelated histories"); a pull needs a shared base, so branch off
	// main through the API instead.
	if _, _, err := c.CreateBranch(srv.AdminUser, name, sdk.CreateBranchOption{BranchName: "change", OldBranchName: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.UpdateFile(srv.AdminUser, name, "a.txt", sdk.UpdateFileOptions{
		FileOptions: sdk.FileOptions{BranchName: "change", Message: "change"},
		SHA:         fileSHA(t, c, srv.AdminUser, name, "change", "a.txt"),
		Content:     "dHdvCg==", // "two\n"
	}); err != nil {
		t.Fatal(err)
	}
	pr, _, err := c.CreatePullRequest(srv.AdminUser, name, sdk.CreatePullRequestOption{Head: "change", Base: "main", Title: "change"})
	if err != nil {
		t.Fatal(err)
	}
	sha, err := srv.MergePull(ctx, srv.AdminUser, name, pr.Index)
	if err != nil {
		t.Fatal(err)
	}
	branch, _, err := c.GetRepoBranch(srv.AdminUser, name, "main")
	if err != nil {
		t.Fatal(err)
	}
	if branch.Commit.ID != sha {
		t.Errorf("main = %s, want the merge commit %s", branch.Commit.ID, sha)
	}
}

func fileSHA(t *testing.T, c *sdk.Client, owner, repo, ref, path string) string {
	t.Helper()
	cr, _, err := c.GetContents(owner, repo, ref, path)
	if err != nil {
		t.Fatal(err)
	}
	return cr.SHA
}

// TestRegistry pushes an image to Gitea's container registry the way the
// end-to-end tests do (go-containerregistry with the Docker config the
// server writes) and reads it back.
func TestRegistry(t *testing.T) {
	srv := giteatest.Server(t)
	cfgDir, err := srv.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfgDir)
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(srv.RegistryHost + "/" + srv.AdminUser + "/" + giteatest.Name(t) + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kc := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if err := remote.Write(ref, img, kc, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing %s: %s", ref, err)
	}
	desc, err := remote.Get(ref, kc, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("reading %s back: %s", ref, err)
	}
	if desc.Digest != want {
		t.Errorf("digest of %s = %s, want %s", ref, desc.Digest, want)
	}
	// Anonymous pushes fail: the registry really checks credentials.
	other, _ := name.NewTag(srv.RegistryHost + "/" + srv.AdminUser + "/" + giteatest.Name(t) + ":v1")
	if err := remote.Write(other, img, remote.WithContext(ctx)); err == nil {
		t.Errorf("anonymous push to %s succeeded", other)
	}
}

func TestTLS(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{TLS: true})
	if !strings.HasPrefix(srv.URL, "https://") || srv.CAFile == "" {
		t.Fatalf("URL = %q, CAFile = %q, want https and a CA file", srv.URL, srv.CAFile)
	}
	resp, err := srv.HTTPClient().Get(srv.URL + "/api/v1/version")
	if err != nil {
		t.Fatalf("client trusting the CA: %s", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET version over TLS = %d", resp.StatusCode)
	}
	strict := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	if _, err := strict.Get(srv.URL + "/api/v1/version"); err == nil {
		t.Error("a client without the CA trusted the self-signed certificate")
	}
}

func TestStop(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{})
	if !srv.Running() {
		t.Fatal("not running after Start")
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if srv.Running() {
		t.Error("still running after Stop")
	}
	if _, err := os.Stat(srv.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir %s survived Stop: %v", srv.Dir, err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %s", err)
	}
}

// A port taken between the probe and Gitea's bind (another test package
// starting at the same moment) costs a retry, not a minute's time-out.
func TestStartRetriesATakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	calls := 0
	restore := gitea.SetFreePort(func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	})
	defer restore()

	srv, err := gitea.Start(context.Background(), gitea.Options{StartTimeout: 45 * time.Second})
	if err != nil {
		t.Fatalf("Start with the first port taken: %s", err)
	}
	defer srv.Stop()
	if calls != 2 || strings.HasSuffix(srv.URL, fmt.Sprintf(":%d", taken)) {
		t.Errorf("Start took %d ports and serves at %s; want a second port, not %d", calls, srv.URL, taken)
	}
}

func TestMissingBinary(t *testing.T) {
	_, err := gitea.Start(context.Background(), gitea.Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make gitea") {
		t.Errorf("Start without a binary = %v, want an error telling to run make gitea", err)
	}
}

func TestBinDir(t *testing.T) {
	want := t.TempDir()
	t.Setenv("PINBOT_BIN_DIR", want)
	got, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("BinDir with PINBOT_BIN_DIR = %q, want %q", got, want)
	}
	t.Setenv("PINBOT_BIN_DIR", "")
	got, err = gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(got), "go.mod")); err != nil || filepath.Base(got) != "bin" {
		t.Errorf("BinDir from the working dir = %q, want bin/ next to pinbot's go.mod", got)
	}
}
