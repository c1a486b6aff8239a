package promote

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/internal/testenv/images"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/registry"
)

func TestMain(m *testing.M) { giteatest.Main(m, gitea.Options{}) }

// fixture is one manifest repository in the shared Gitea, with images in
// Gitea's container registry.
type fixture struct {
	t     *testing.T
	srv   *gitea.Server
	owner string
	name  string
	repo  gitforge.Repo
	forge *gitforge.Gitea
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := giteatest.Server(t)
	f := &fixture{t: t, srv: srv, owner: srv.AdminUser, name: giteatest.Name(t)}
	f.repo = gitforge.Repo{Owner: f.owner, Name: f.name}
	forge, err := gitforge.NewGitea(srv.URL, srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	f.forge = forge
	return f
}

// image returns the repository of a test image in Gitea's registry.
func (f *fixture) image(short string) string {
	return fmt.Sprintf("%s/%s/%s-%s", f.srv.RegistryHost, f.owner, f.name, short)
}

// createRepo creates the manifest repository from files (path -> content).
// createRepo pushes files as the first commit of main; a content of
// "symlink:TARGET" commits a symbolic link to TARGET.
func (f *fixture) createRepo(files map[string]string) string {
	f.t.Helper()
	dir := f.t.TempDir()
	for p, content := range files {
		if target, ok := strings.CutPrefix(content, "symlink:"); ok {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
			if err := os.Symlink(target, filepath.Join(dir, p)); err != nil {
				f.t.Fatal(err)
			}
			continue
		}
		filetree.WriteFile(f.t, filepath.Join(dir, p), content)
	}
	sha, err := f.srv.CreateRepoFromDir(context.Background(), f.owner, f.name, "main", dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return sha
}

func (f *fixture) registry(opts ...registry.Option) *registry.Client {
	c, err := registry.New(append([]registry.Option{
		registry.WithBasicAuth(f.srv.RegistryHost, f.srv.AdminUser, f.srv.Token),
		registry.WithRetry(5 * time.Second),
	}, opts...)...)
	if err != nil {
		f.t.Fatalf("registry.New: %s", err)
	}
	return c
}

func (f *fixture) env() Env {
	return Env{
		Forge:    f.forge,
		Registry: f.registry(),
		Repo:     f.repo,
		CloneURL: f.srv.RepoURL(f.owner, f.name),
		Auth:     gitforge.Auth{Token: f.srv.Token},
	}
}

func (f *fixture) remoteOpts() []remote.Option {
	return []remote.Option{remote.WithAuth(&authn.Basic{Username: f.srv.AdminUser, Password: f.srv.Token})}
}

// pushImage pushes a new random single-platform image (linux/amd64) to
// repo:tag and returns its digest. created sets its config's created time.
func (f *fixture) pushImage(repo, tag string, created time.Time) string {
	f.t.Helper()
	p, err := images.Push(repo+":"+tag, f.platformImage("amd64", created), f.remoteOpts()...)
	if err != nil {
		f.t.Fatal(err)
	}
	return p.Digest
}

// platformImage is a random linux/arch image created at created, with the
// OCI revision and source labels.
func (f *fixture) platformImage(arch string, created time.Time) v1.Image {
	f.t.Helper()
	img, err := images.Random(images.OnPlatform(v1.Platform{OS: "linux", Architecture: arch}), func(cf *v1.ConfigFile) {
		cf.Created = v1.Time{Time: created}
		cf.Config.Labels = map[string]string{"org.opencontainers.image.revision": "c0ffee", "org.opencontainers.image.source": "https://git.example/app"}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return img
}

// index is a pushed multi-platform index.
type index struct {
	Digest       string
	Amd64, Arm64 string // children
}

// pushIndex pushes a new index with linux/amd64 and linux/arm64 children
// after a buildx-style attestation manifest (images.PushIndex).
func (f *fixture) pushIndex(repo, tag string) index {
	f.t.Helper()
	children := []v1.Image{f.platformImage("amd64", time.Time{}), f.platformImage("arm64", time.Time{})}
	idx, err := images.PushIndex(repo+":"+tag, children, f.remoteOpts()...)
	if err != nil {
		f.t.Fatal(err)
	}
	return index{Digest: idx.Digest, Amd64: idx.Children["amd64"], Arm64: idx.Children["arm64"]}
}

// sdk returns a Gitea SDK client for assertions.
func (f *fixture) sdk() *sdk.Client {
	f.t.Helper()
	c, err := f.srv.Client(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// openPulls returns the open pull requests of the repository.
func (f *fixture) openPulls() []gitforge.Pull {
	f.t.Helper()
	prs, err := f.forge.ListPulls(context.Background(), f.repo, gitforge.StateOpen)
	if err != nil {
		f.t.Fatal(err)
	}
	return prs
}

// file reads a file at a ref of the repository.
func (f *fixture) file(ref, path string) string {
	f.t.Helper()
	raw, _, err := f.sdk().GetFile(f.owner, f.name, ref, path)
	if err != nil {
		f.t.Fatalf("reading %s at %s: %s", path, ref, err)
	}
	return string(raw)
}

// branchExists reports whether the repository has the branch.
func (f *fixture) branchExists(branch string) bool {
	f.t.Helper()
	_, resp, err := f.sdk().GetRepoBranch(f.owner, f.name, branch)
	if resp != nil && resp.StatusCode == 404 {
		return false
	}
	if err != nil {
		f.t.Fatalf("reading branch %s: %s", branch, err)
	}
	return true
}

// branches lists the repository's branches.
func (f *fixture) branches() []string {
	f.t.Helper()
	bs, _, err := f.sdk().ListRepoBranches(f.owner, f.name, sdk.ListRepoBranchesOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	sort.Strings(out)
	return out
}

// pullDiffLines returns the removed and added lines of a pull request's
// diff, as Gitea computes it.
func (f *fixture) pullDiffLines(number int64) (removed, added []string) {
	f.t.Helper()
	raw, _, err := f.sdk().GetPullRequestDiff(f.owner, f.name, number, sdk.PullRequestDiffOptions{})
	if err != nil {
		f.t.Fatalf("reading the diff of #%d: %s", number, err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			removed = append(removed, l[1:])
		case strings.HasPrefix(l, "+"):
			added = append(added, l[1:])
		}
	}
	return removed, added
}

// merge merges pull request number with a merge commit, polling while
// Gitea still checks mergeability (it answers 405 without an SDK error,
// which gitea.Server.MergePull does not retry).
func (f *fixture) merge(number int64) {
	f.t.Helper()
	poll.Until(f.t, 30*time.Second, fmt.Sprintf("merging #%d", number), func() (bool, string) {
		ok, resp, err := f.sdk().MergePullRequest(f.owner, f.name, number, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge})
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return err == nil && ok, fmt.Sprintf("status %d, error %v", status, err)
	})
}

// tag adds tag to digest in repo.
func (f *fixture) tag(repo, digest, tag string) {
	f.t.Helper()
	ref, err := name.NewDigest(repo+"@"+digest, name.Insecure)
	if err != nil {
		f.t.Fatal(err)
	}
	desc, err := remote.Get(ref, f.remoteOpts()...)
	if err != nil {
		f.t.Fatalf("reading %s: %s", ref, err)
	}
	if err := remote.Tag(ref.Context().Tag(tag), desc, f.remoteOpts()...); err != nil {
		f.t.Fatalf("tagging %s as %s: %s", ref, tag, err)
	}
}

// testContext carries a logger writing to the test log.
func testContext(t *testing.T) context.Context {
	h := slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})
	return logctx.Into(context.Background(), slog.New(h))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
