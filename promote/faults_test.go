package promote

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/faultproxy"
	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/registry"
)

// TestPromoteForgeGone stops the forge after the branch was pushed and
// before the pull request was written: the promotion fails with an error
// naming what it was doing, and a re-run converges to one pull request.
func TestPromoteForgeGone(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{"app.yaml": "image: " + app + ":v1@" + v1 + "\n"})
	v2 := f.pushImage(app, "v2", time.Time{})

	// The forge goes away once the branch is pushed, and comes back on
	// the same address.
	proxy := faultproxy.StartHTTP(t, f.srv.URL)
	var pushed atomic.Int32
	proxy.After = func(r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") && pushed.Add(1) == 1 {
			proxy.SetMode(faultproxy.Refuse)
		}
	}
	forge, err := gitforge.NewGitea(proxy.URL(), f.srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	env := f.env()
	env.Forge, env.CloneURL = forge, proxy.URL()+"/"+f.owner+"/"+f.name+".git"
	req := Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceDigestFile}}}

	_, err = Run(ctx, env, req)
	if err == nil {
		t.Fatal("promotion succeeded with the forge gone")
	}
	t.Logf("error: %s", err)
	for _, want := range []string{"promoting " + app + " in target default", "after pushing " + pr.Branch("pinbot/", "default", app)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), f.srv.Token) {
		t.Error("the error holds the token")
	}
	if pushed.Load() != 1 || len(f.openPulls()) != 0 {
		t.Fatalf("pushes %d, open pull requests %d: the forge went away at the wrong moment", pushed.Load(), len(f.openPulls()))
	}

	proxy.SetMode(faultproxy.Pass)
	res, err := Run(ctx, env, req)
	if err != nil {
		t.Fatalf("re-run: %s", err)
	}
	if res[0].Status != StatusOpened {
		t.Errorf("re-run status %s, want opened", res[0].Status)
	}
	prs := f.openPulls()
	if len(prs) != 1 || prs[0].HeadSHA != res[0].Meta.Head {
		t.Fatalf("open pull requests after the re-run: %+v", prs)
	}
	if got := f.file(prs[0].Head, "app.yaml"); got != "image: "+app+":v2@"+v2+"\n" {
		t.Errorf("branch content = %q", got)
	}
	// And a third run has nothing left to do.
	res, err = Run(ctx, env, req)
	if err != nil || res[0].Status != StatusUnchanged {
		t.Errorf("third run: %v, %v", res, err)
	}
}

// TestPromoteRegistry5xx puts a proxy answering 503 for manifests in front
// of Gitea's registry: the promotion retries, then fails clearly, and
// pushes nothing.
func TestPromoteRegistry5xx(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{"app.yaml": "image: " + app + ":v1@" + v1 + "\n"})
	v2 := f.pushImage(app, "v2", time.Time{})

	proxy := faultproxy.StartHTTP(t, f.srv.URL)
	var failed atomic.Int32
	proxy.Filter = func(r *http.Request) int {
		if strings.Contains(r.URL.Path, "/manifests/") {
			failed.Add(1)
			return http.StatusServiceUnavailable
		}
		return 0
	}
	// Every registry connection goes to the proxy, whatever the host.
	dialer := &net.Dialer{}
	addr := strings.TrimPrefix(proxy.URL(), "http://")
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}}

	env := f.env()
	env.Registry = f.registry(registry.WithTransport(tr), registry.WithRetry(2*time.Second))
	started := time.Now()
	_, err := Run(context.Background(), env, Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceDigestFile}}})
	if err == nil {
		t.Fatal("promotion succeeded through a failing registry")
	}
	t.Logf("after %s and %d answers of 503: %s", time.Since(started).Round(time.Millisecond), failed.Load(), err)
	if failed.Load() < 2 {
		t.Errorf("the registry was asked %d times; want retries", failed.Load())
	}
	for _, want := range []string{"checking " + app + "@" + v2, "503"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := f.branches(); !cmp.Equal(got, []string{"main"}) {
		t.Errorf("branches = %q; nothing may be pushed", got)
	}
}

// TestPromoteBaseMoves moves the base branch right after the promotion
// pushed its branch: the promotion regenerates its commit on the new base.
func TestPromoteBaseMoves(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	files := map[string]string{"app.yaml": "image: " + app + ":v1@" + v1 + "\n"}
	f.createRepo(files)
	v2 := f.pushImage(app, "v2", time.Time{})

	// Someone moves the base right after pinbot's first push.
	proxy := faultproxy.StartHTTP(t, f.srv.URL)
	var pushed atomic.Int32
	var moved string
	proxy.After = func(r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-receive-pack") || pushed.Add(1) != 1 {
			return
		}
		dir := t.TempDir()
		filetree.WriteFile(t, filepath.Join(dir, "app.yaml"), files["app.yaml"])
		filetree.WriteFile(t, filepath.Join(dir, "README.md"), "someone merged something else\n")
		sha, err := f.srv.PushDir(context.Background(), f.owner, f.name, "main", dir, "Unrelated change")
		if err != nil {
			t.Errorf("moving the base: %s", err)
		}
		moved = sha
	}
	env := f.env()
	env.CloneURL = proxy.URL() + "/" + f.owner + "/" + f.name + ".git"
	res, err := Run(ctx, env, Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Load() != 2 {
		t.Errorf("%d pushes, want 2 (the second regenerated on the moved base)", pushed.Load())
	}
	if res[0].Meta.Base != moved || res[0].Status != StatusOpened {
		t.Errorf("result built on %s (%s), want the moved base %s", res[0].Meta.Base, res[0].Status, moved)
	}
	commit, _, err := f.sdk().GetSingleCommit(f.owner, f.name, res[0].Pull.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	if len(commit.Parents) != 1 || commit.Parents[0].SHA != moved {
		t.Errorf("the pull request's commit has parents %+v, want the moved base %s", commit.Parents, moved)
	}
}
