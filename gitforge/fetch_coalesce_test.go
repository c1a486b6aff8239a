package gitforge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// TestFetchesAskedTogetherShareARoundTrip: ten fetches of one branch
// asked together, through a proxy that slows each ref advertisement, cost
// at most two advertisements (one may have begun before some of them
// were asked), and each returns the head; a fetch asked after a push
// sees the push, and other credentials are not answered by them.
func TestFetchesAskedTogetherShareARoundTrip(t *testing.T) {
	srv := giteatest.Server(t)
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	target, err := url.Parse(srv.RepoURL(repo.Owner, repo.Name))
	if err != nil {
		t.Fatal(err)
	}
	var adverts atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/info/refs") {
			adverts.Add(1)
			time.Sleep(200 * time.Millisecond)
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	via := *target
	via.Host = strings.TrimPrefix(front.URL, "http://")
	c, err := gitforge.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Repository(via.String())
	if err != nil {
		t.Fatal(err)
	}
	auth := gitforge.Auth{Token: srv.Token}
	ctx := context.Background()

	got := make([]string, 10)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			s, err := r.Fetch(ctx, "main", auth)
			if err != nil {
				t.Errorf("fetch %d: %s", i, err)
				return
			}
			got[i] = s.Commit()
		})
	}
	wg.Wait()
	for i, c := range got {
		if c != sha {
			t.Errorf("fetch %d: %s; want %s", i, c, sha)
		}
	}
	if n := adverts.Load(); n > 2 {
		t.Errorf("10 fetches asked together made %d ref advertisements; want at most 2", n)
	}

	sha2 := pushBranch(t, srv, repo, "main", "v: 1\n")
	if s, err := r.Fetch(ctx, "main", auth); err != nil || s.Commit() != sha2 {
		t.Fatalf("fetch after a push: %v, %v; want %s", s, err, sha2)
	}

	// Credentials that differ fetch on their own: a wrong token fails
	// even while the right one's fetch is fresh.
	before := adverts.Load()
	if _, err := r.Fetch(ctx, "main", gitforge.Auth{Token: "not-a-token"}); err == nil {
		t.Error("a fetch with a wrong token succeeded on the other credentials' fetch")
	}
	if adverts.Load() == before {
		t.Error("the wrong token's fetch made no round trip")
	}
}
