package promote

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/registry"
)

// cutProxy is a reverse proxy in front of Gitea that can go away like a
// stopped server: once cut, open connections are dropped and new ones
// refused, until it is started again on the same address.
type cutProxy struct {
	t      *testing.T
	target *url.URL
	addr   string

	mu      sync.Mutex
	ln      net.Listener
	srv     *http.Server
	cut     bool
	onPush  bool   // cut once a git push has been served
	hook    func() // run once after the first git push was served
	pushed  atomic.Int32
	proxied atomic.Int32
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, target: u}
	p.start("127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.addr }

func (p *cutProxy) start(addr string) {
	p.t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy listening on %s: %s", addr, err)
	}
	rp := httputil.NewSingleHostReverseProxy(p.target)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		p.proxied.Add(1)
		rp.ServeHTTP(w, r)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			p.pushed.Add(1)
			p.mu.Lock()
			hook := p.hook
			p.hook = nil
			p.mu.Unlock()
			if hook != nil {
				hook()
			}
			p.mu.Lock()
			if p.onPush {
				p.cut = true
				p.ln.Close() // new connections are refused from now on
			}
			p.mu.Unlock()
		}
	})}
	p.mu.Lock()
	p.ln, p.srv, p.addr, p.cut = ln, srv, ln.Addr().String(), false
	p.mu.Unlock()
	go srv.Serve(ln)
}

// cutOnPush makes the proxy go away once a git push has been served.
func (p *cutProxy) cutOnPush() {
	p.mu.Lock()
	p.onPush = true
	p.mu.Unlock()
}

// restart brings the proxy back on its address.
func (p *cutProxy) restart() {
	p.stop()
	p.mu.Lock()
	p.onPush = false
	p.mu.Unlock()
	p.start(p.addr)
}

func (p *cutProxy) stop() {
	p.mu.Lock()
	srv := p.srv
	p.mu.Unlock()
	_ = srv.Close()
}

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

	proxy := newCutProxy(t, f.srv.URL)
	forge, err := gitforge.NewGitea(proxy.URL(), f.srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	env := f.env()
	env.Forge, env.CloneURL = forge, proxy.URL()+"/"+f.owner+"/"+f.name+".git"
	req := Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: SourceDigestFile}}}

	proxy.cutOnPush()
	_, err = Run(ctx, env, req)
	if err == nil {
		t.Fatal("promotion succeeded with the forge gone")
	}
	t.Logf("error: %s", err)
	for _, want := range []string{"promoting " + app + " in target default", "after pushing " + Branch("pinbot/", "default", app)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), f.srv.Token) {
		t.Error("the error holds the token")
	}
	if proxy.pushed.Load() != 1 || len(f.openPulls()) != 0 {
		t.Fatalf("pushes %d, open pull requests %d: the forge went away at the wrong moment", proxy.pushed.Load(), len(f.openPulls()))
	}

	proxy.restart()
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

	target, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var failed atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			failed.Add(1)
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	// Every registry connection goes to the proxy, whatever the host.
	dialer := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, ln.Addr().String())
	}}

	env := f.env()
	env.Registry = f.registry(registry.WithTransport(tr), registry.WithRetry(2*time.Second))
	started := time.Now()
	_, err = Run(context.Background(), env, Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: SourceDigestFile}}})
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

	proxy := newCutProxy(t, f.srv.URL)
	var moved string
	proxy.mu.Lock()
	proxy.hook = func() {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "app.yaml"), files["app.yaml"])
		writeFile(t, filepath.Join(dir, "README.md"), "someone merged something else\n")
		sha, err := f.srv.PushDir(context.Background(), f.owner, f.name, "main", dir, "Unrelated change")
		if err != nil {
			t.Errorf("moving the base: %s", err)
		}
		moved = sha
	}
	proxy.mu.Unlock()
	env := f.env()
	env.CloneURL = proxy.URL() + "/" + f.owner + "/" + f.name + ".git"
	res, err := Run(ctx, env, Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	if proxy.pushed.Load() != 2 {
		t.Errorf("%d pushes, want 2 (the second regenerated on the moved base)", proxy.pushed.Load())
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
