package serve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/config"
)

// TestGiteaPackageEvents finds out, on the real Gitea of the tests
// (1.26), whether a push to its container registry sends a package
// webhook, with which headers and payload, and then that such a webhook,
// delivered by Gitea to serve's handler, opens the promotion pull request.
func TestGiteaPackageEvents(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{})
	t.Logf("Gitea %s", srv.Version)
	t.Run("what Gitea sends", func(t *testing.T) { testPackageEventShape(t, srv) })
	t.Run("multi-arch push", func(t *testing.T) { testPackageEventsMultiArch(t, srv) })
	t.Run("a pushed image opens the promotion pull request", func(t *testing.T) { testPackageEventPromotes(t, srv) })
}

// delivery is one webhook request Gitea made.
type delivery struct {
	header http.Header
	body   []byte
}

// userPackageHook makes a webhook of the admin user (package events come
// from the package's owner, not from a repository) for package events to
// url, signed with secret, and deletes it when the test ends.
func userPackageHook(t *testing.T, srv *gitea.Server, url, secret string) {
	t.Helper()
	c, err := srv.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := c.CreateMyHook(sdk.CreateHookOption{
		Type:   sdk.HookTypeGitea,
		Config: map[string]string{"url": url, "content_type": "json", "secret": secret},
		Events: []string{"package"},
		Active: true,
	})
	if err != nil {
		t.Fatalf("creating the package webhook: %s", err)
	}
	t.Cleanup(func() {
		c, err := srv.Client(context.Background())
		if err == nil {
			_, err = c.DeleteMyHook(h.ID)
		}
		if err != nil {
			t.Errorf("deleting the package webhook: %s", err)
		}
	})
}

func testPackageEventShape(t *testing.T, srv *gitea.Server) {
	const secret = "package-probe-s3cret"
	got := make(chan delivery, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		got <- delivery{header: req.Header.Clone(), body: b}
	}))
	defer rcv.Close()
	userPackageHook(t, srv, rcv.URL, secret)

	image := srv.RegistryHost + "/" + srv.AdminUser + "/" + giteatest.Name(t)
	if _, err := srv.PushRandomImage(image + ":v7"); err != nil {
		t.Fatal(err)
	}
	var d delivery
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("Gitea sent no package webhook within 30 s of a container push")
	}
	t.Logf("Gitea %s sent for a container push: X-Gitea-Event %q, X-Gitea-Event-Type %q, X-Gitea-Delivery %q, %d-byte body",
		srv.Version, d.header.Get("X-Gitea-Event"), d.header.Get("X-Gitea-Event-Type"), d.header.Get("X-Gitea-Delivery"), len(d.body))
	if ev := d.header.Get("X-Gitea-Event-Type"); ev != EventPackage {
		t.Errorf("X-Gitea-Event-Type = %q, want %q", ev, EventPackage)
	}
	if ev := EventType(d.header.Get("X-Gitea-Event-Type"), d.header.Get("X-Gitea-Event"), d.body); ev != EventPackage {
		t.Errorf("EventType = %q, want %q", ev, EventPackage)
	}
	if d.header.Get("X-Gitea-Delivery") == "" {
		t.Error("no X-Gitea-Delivery to deduplicate on")
	}
	if !ValidSignature([]byte(secret), d.body, d.header.Get("X-Gitea-Signature")) {
		t.Error("X-Gitea-Signature is not the HMAC-SHA256 of the body")
	}
	pe, err := ParsePackage(d.body)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("payload: action %q, package type %q, name %q, version %q, html_url %q, owner %q",
		pe.Action, pe.Package.Type, pe.Package.Name, pe.Package.Version, pe.Package.HTMLURL, pe.Package.Owner.Login)
	img, tag, ok := pe.Image()
	if !ok || img != strings.ToLower(image) || tag != "v7" {
		t.Errorf("Image() = %q, %q, %v; want %q, v7, true (payload %+v)", img, tag, ok, strings.ToLower(image), pe)
	}
}

// The repository is hostile, as a repository a signed package event names
// may be: links to a pinned file outside it and to /dev/zero, a journal
// of the old protocol planted in it, a tracked file named like a staged
// one. The promotion changes deploy/app.yaml alone, and nothing outside.
func testPackageEventPromotes(t *testing.T, srv *gitea.Server) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.yaml")
	var victimBody string
	r := giteatest.NewManifestRepo(t, srv, func(dir, app, v1 string) {
		victimBody = "image: " + app + ":v1@" + v1 + "\n"
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.WriteFile(victim, []byte(victimBody), 0o644))
		must(os.Symlink(victim, filepath.Join(dir, "deploy", "abs.yaml")))
		must(os.Symlink("/dev/zero", filepath.Join(dir, "deploy", "zero.yaml")))
		must(os.Symlink(outside, filepath.Join(dir, "deploy", "outside")))
		must(os.WriteFile(filepath.Join(dir, ".pinbot-journal"), []byte(`{"version":1,"phase":"committing","files":[{"file":"deploy/outside/victim.yaml"}]}`), 0o644))
		must(os.WriteFile(filepath.Join(dir, "deploy", ".app.yaml.pinbot-123456"), []byte("notes\n"), 0o644))
	})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(srv.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "package-serve-s3cret"
	cfg := &Config{
		Config:  config.Config{Forge: &config.ForgeConfig{URL: srv.URL, TokenFile: tokenFile}},
		Promote: []Target{{Repo: r.Owner + "/" + r.Name, Images: []string{r.App}}},
	}
	answered := make(chan int, 16)
	cacheDir := t.TempDir()
	cache, err := gitforge.NewCache(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	d := testDaemon(t, cfg, Options{Secret: []byte(secret), Dashboard: true, Cache: cache})
	mux := d.mux(true)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rw := httptest.NewRecorder()
		mux.ServeHTTP(rw, req)
		answered <- rw.Code
		for k, v := range rw.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rw.Code)
		_, _ = w.Write(rw.Body.Bytes())
	}))
	defer hs.Close()
	userPackageHook(t, srv, hs.URL+"/webhook/gitea", secret)

	v2 := r.Push(t, "v2")
	select {
	case code := <-answered:
		if code != http.StatusAccepted {
			t.Fatalf("serve answered Gitea's package webhook %d, want 202", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Gitea delivered no package webhook to serve within 30 s")
	}
	c, err := srv.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pulls []*sdk.PullRequest
	poll.Until(t, 2*time.Minute, "the promotion pull request of "+v2, func() (bool, string) {
		pulls, _, err = c.ListRepoPullRequests(r.Owner, r.Name, sdk.ListPullRequestsOptions{State: sdk.StateOpen})
		if err != nil {
			t.Fatal(err)
		}
		return len(pulls) > 0 && strings.Contains(pulls[0].Body, v2), fmt.Sprintf("%d open", len(pulls))
	})
	if len(pulls) != 1 || !strings.HasPrefix(pulls[0].Head.Ref, "pinbot/") {
		t.Fatalf("open pull requests: %d, first head %q; want one pinbot/ branch", len(pulls), pulls[0].Head.Ref)
	}
	// The promotion fetched into serve's cache (--cache-dir), nowhere
	// shared.
	if stores, _ := filepath.Glob(filepath.Join(cacheDir, "git", "*.git", "objects")); len(stores) != 1 {
		t.Errorf("object stores under the cache directory: %q, want the manifest repository's", stores)
	}
	raw, _, err := c.GetFile(r.Owner, r.Name, pulls[0].Head.Ref, "deploy/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), r.App+":") || !strings.Contains(string(raw), "@"+v2) {
		t.Errorf("the pull request's deploy/app.yaml does not pin %s@%s:\n%s", r.App, v2, raw)
	}
	files, _, err := c.ListPullRequestFiles(r.Owner, r.Name, pulls[0].Index, sdk.ListPullRequestFilesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Filename != "deploy/app.yaml" {
		var names []string
		for _, f := range files {
			names = append(names, f.Filename)
		}
		t.Errorf("the pull request changes %q, want deploy/app.yaml alone", names)
	}
	if b, _ := os.ReadFile(victim); string(b) != victimBody {
		t.Errorf("the file outside the repository was changed: %q", b)
	}
	t.Logf("package webhook from a push of %s:v2 opened %s", r.App, pulls[0].HTMLURL)

	// Merge #N now, from the page: serve merges only at the head it was
	// given, the one pinbot judged, and says so when the head moved.
	repo := r.Owner + "/" + r.Name
	// Gitea checks a new pull request's mergeability in the background:
	// until it has, a merge is "not merged yet".
	poll.Until(t, time.Minute, "the merge at another head refused", func() (bool, string) {
		err := d.promote.merge(context.Background(), repo, pulls[0].Index, strings.Repeat("0", 40), "Merged by pinbot for olga: release window")
		return err != nil && strings.Contains(err.Error(), "its head moved since pinbot judged it"), fmt.Sprint(err)
	})
	poll.Until(t, time.Minute, "the merge at the judged head", func() (bool, string) {
		err := d.promote.merge(context.Background(), repo, pulls[0].Index, pulls[0].Head.Sha, "Merged by pinbot for olga: release window")
		return err == nil, fmt.Sprint(err)
	})
	merged, _, err := c.GetPullRequest(r.Owner, r.Name, pulls[0].Index)
	if err != nil || !merged.HasMerged || merged.MergedCommitID == nil {
		t.Fatalf("the pull request after the merge: %v, %+v", err, merged)
	}
	commit, _, err := c.GetSingleCommit(r.Owner, r.Name, *merged.MergedCommitID)
	if err != nil || !strings.Contains(commit.RepoCommit.Message, "Merged by pinbot for olga: release window") {
		t.Errorf("the merge commit does not name who merged it and why: %v, %+v", err, commit)
	}
}

// testPackageEventsMultiArch pushes an index of two platform images: Gitea
// sends one event per manifest, the untagged children's (version = their
// digest) and the tag's, and only the tag's event is one pinbot promotes.
func testPackageEventsMultiArch(t *testing.T, srv *gitea.Server) {
	const secret = "package-index-s3cret"
	got := make(chan delivery, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		got <- delivery{header: req.Header.Clone(), body: b}
	}))
	defer rcv.Close()
	userPackageHook(t, srv, rcv.URL, secret)

	image := srv.RegistryHost + "/" + srv.AdminUser + "/" + giteatest.Name(t)
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	ref, err := name.ParseReference(image+":multi", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuth(&authn.Basic{Username: srv.AdminUser, Password: srv.Token})); err != nil {
		t.Fatal(err)
	}
	var versions []string
	promotable := 0
	for len(versions) < 3 {
		select {
		case d := <-got:
			pe, err := ParsePackage(d.body)
			if err != nil {
				t.Fatal(err)
			}
			versions = append(versions, pe.Package.Version)
			if _, tag, ok := pe.Image(); ok {
				promotable++
				if tag != "multi" {
					t.Errorf("event of version %q promotes tag %q, want only the tag multi", pe.Package.Version, tag)
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Gitea sent %d package webhooks within 30 s of a two-platform index push, want 3: %q", len(versions), versions)
		}
	}
	t.Logf("a two-platform index push sent package events of versions %q", versions)
	if promotable != 1 {
		t.Errorf("%d of the events promote, want 1 (the tag's): %q", promotable, versions)
	}
	// The children are pushed before the index that names them, but
	// Gitea's delivery queue does not promise order: count, not order.
	digests := 0
	for _, v := range versions {
		if strings.HasPrefix(v, "sha256:") {
			digests++
		}
	}
	if digests != 2 || !slices.Contains(versions, "multi") {
		t.Errorf("versions %q: want the two untagged children (digests) and the tag", versions)
	}
}
