package gitsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

func TestMain(m *testing.M) { giteatest.Main(m, gitea.Options{}) }

// TestRecentSharesAFetchAmongPassesOnTheirInterval: on real Gitea, the
// passes on their interval asking for one branch's head within Slack
// share one ref advertisement, even asked one after another; a pass a
// push woke (Head) reads the head the push made, and other credentials
// are never answered by another's fetch.
func TestRecentSharesAFetchAmongPassesOnTheirInterval(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	name := giteatest.Name(t)
	dir := t.TempDir()
	write := func(v string) {
		if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte("v: "+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0")
	first, err := srv.CreateRepoFromDir(ctx, srv.AdminUser, name, "main", dir)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(srv.RepoURL(srv.AdminUser, name))
	if err != nil {
		t.Fatal(err)
	}
	var adverts atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/info/refs") {
			adverts.Add(1)
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	via := *target
	via.Host = strings.TrimPrefix(front.URL, "http://")
	cache, err := gitforge.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := New(cache)
	auth := gitforge.Auth{Token: srv.Token}
	head := func(fetch func(context.Context, string, string, gitforge.Auth, func(Revision) error) error, auth gitforge.Auth) (string, error) {
		var got string
		err := fetch(ctx, via.String(), "main", auth, func(r Revision) error { got = r.Commit; return nil })
		return got, err
	}

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if c, err := head(s.Recent, auth); err != nil || c != first {
				t.Errorf("Recent: %s, %v; want %s", c, err, first)
			}
		})
	}
	wg.Wait()
	for range 10 { // one after another, within Slack
		if c, err := head(s.Recent, auth); err != nil || c != first {
			t.Errorf("Recent: %s, %v; want %s", c, err, first)
		}
	}
	if n := adverts.Load(); n != 1 {
		t.Errorf("20 heads asked within Slack made %d ref advertisements; want 1", n)
	}

	write("1")
	second, err := srv.PushDir(ctx, srv.AdminUser, name, "main", dir, "v 1")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := head(s.Head, auth); err != nil || c != second {
		t.Errorf("Head after a push: %s, %v; want %s", c, err, second)
	}
	before := adverts.Load()
	if _, err := head(s.Recent, gitforge.Auth{Token: "not-" + srv.Token}); err == nil {
		t.Error("Recent with other credentials was answered by another's fetch")
	}
	if adverts.Load() == before {
		t.Error("Recent with other credentials made no request of its own")
	}
}
