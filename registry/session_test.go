package registry

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"golang.org/x/sync/errgroup"

	"pinbot.dev/pinbot/internal/imageref"
)

// requestLog records every request a server got, as "METHOD path", and
// the connections it accepted.
type requestLog struct {
	mu    sync.Mutex
	reqs  []string
	conns atomic.Int32
}

func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *requestLog) count(match func(string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reqs {
		if match(r) {
			n++
		}
	}
	return n
}

func (l *requestLog) total() int { return l.count(func(string) bool { return true }) }

// newLoggedRegistry is newTestRegistry with every request to the wrapped
// server logged, after auth, and its connections counted.
func newLoggedRegistry(t *testing.T, auth func(http.Handler) http.Handler) (*testRegistry, *requestLog) {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	raw := httptest.NewServer(h)
	t.Cleanup(raw.Close)
	l := &requestLog{}
	wrapped := httptest.NewUnstartedServer(l.wrap(auth(h)))
	wrapped.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.conns.Add(1)
		}
	}
	wrapped.Start()
	t.Cleanup(wrapped.Close)
	return &testRegistry{raw: hostOf(raw), host: hostOf(wrapped)}, l
}

// TestDriftOf100TagsRequests is what `pinbot drift` asks of a registry
// whose token serves every repository (Gitea's does): 100 tags in 100
// repositories resolved eight at a time, one of them moved and described
// by digest. One ping and one token serve them all, over a few kept-alive
// connections, within the 110 requests issue 12 allows.
func TestDriftOf100TagsRequests(t *testing.T) {
	isolateDockerConfig(t, "")
	var tokens atomic.Int32
	wrap, _ := tokenAuth(t, false, &tokens)
	reg, reqs := newLoggedRegistry(t, wrap)
	const tags = 100
	digests := make([]string, tags)
	for i := range tags {
		digests[i] = reg.push(t, fmt.Sprintf("team/svc%03d:main", i), buildImage(t, imageSpec{platform: platformAMD64})).String()
	}

	c := newClient(t, WithBasicAuth(reg.host, testUser, testPass))
	got := make([]string, tags)
	var g errgroup.Group
	g.SetLimit(DefaultConcurrency)
	for i := range tags {
		g.Go(func() error {
			d, err := c.Resolve(t.Context(), fmt.Sprintf("%s/team/svc%03d:main", reg.host, i))
			got[i] = d.Digest
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Resolve: %s", err)
	}
	if diff := cmp.Diff(digests, got); diff != "" {
		t.Fatalf("digests (-want +got):\n%s", diff)
	}
	img, err := c.Describe(t.Context(), fmt.Sprintf("%s/team/svc007@%s", reg.host, digests[7]))
	if err != nil || img.Platform == nil || *img.Platform != (imageref.Platform{OS: "linux", Architecture: "amd64"}) {
		t.Fatalf("Describe = %+v, %v", img, err)
	}

	total := reqs.total()
	t.Logf("drift of %d tags: %d registry requests (%d HEAD, %d token, %d ping), %d connections",
		tags, total, reqs.count(func(r string) bool { return strings.HasPrefix(r, "HEAD ") }),
		tokens.Load(), reqs.count(func(r string) bool { return r == "GET /v2/" }), reqs.conns.Load())
	if total > 110 {
		t.Errorf("registry requests = %d, want at most 110", total)
	}
	if n := tokens.Load(); n != 1 {
		t.Errorf("tokens = %d, want 1", n)
	}
	if n := reqs.count(func(r string) bool { return r == "GET /v2/" }); n != 1 {
		t.Errorf("pings = %d, want 1", n)
	}
	// Connections are kept alive and reused: about one per request in
	// flight, plus the ping's HTTPS attempt, which a plain loopback
	// registry refuses. A new one may be dialled when a request starts
	// before the previous response's connection is back in the pool, so
	// the bound is loose; without keep-alive there is one per request.
	if n := int(reqs.conns.Load()); n > total/3 {
		t.Errorf("connections = %d for %d requests, want at most %d", n, total, total/3)
	}
}

// scopedTokenAuth is a registry whose tokens carry the scopes they were
// asked for, as Docker Hub's and the distribution registry's do: a request
// for a repository the token does not cover is answered 401 with a
// challenge naming the missing scope. It records the scopes of every token
// request.
func scopedTokenAuth(t *testing.T, asked *[][]string, mu *sync.Mutex) func(http.Handler) http.Handler {
	t.Helper()
	granted := map[string][]string{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				if user, pass, ok := r.BasicAuth(); !ok || user != testUser || pass != testPass {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				b := make([]byte, 16)
				rand.Read(b)
				tok := hex.EncodeToString(b)
				scopes := r.URL.Query()["scope"]
				mu.Lock()
				granted[tok] = scopes
				*asked = append(*asked, scopes)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_in": 300})
				return
			}
			challenge := fmt.Sprintf(`Bearer realm="http://%s/token",service="test"`, r.Host)
			need := ""
			if repo, _, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/"), "/manifests/"); ok {
				need = "repository:" + repo + ":pull"
				challenge += fmt.Sprintf(`,scope=%q`, need)
			}
			mu.Lock()
			scopes, ok := granted[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
			mu.Unlock()
			if !ok || (need != "" && !slices.Contains(scopes, need)) {
				w.Header().Set("WWW-Authenticate", challenge)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TestScopedTokens checks that one token serves every repository its
// scopes allow, and that a repository it does not cover gets one new token
// carrying every scope asked for so far, as several scope parameters.
func TestScopedTokens(t *testing.T) {
	isolateDockerConfig(t, "")
	var asked [][]string
	var mu sync.Mutex
	reg, _ := newLoggedRegistry(t, scopedTokenAuth(t, &asked, &mu))
	for _, repo := range []string{"a", "b"} {
		reg.push(t, repo+":v1", buildImage(t, imageSpec{}))
	}
	c := newClient(t, WithBasicAuth(reg.host, testUser, testPass))
	for _, repo := range []string{"a", "a", "b", "a", "b"} {
		if _, err := c.Resolve(t.Context(), reg.host+"/"+repo+":v1"); err != nil {
			t.Fatalf("Resolve %s: %s", repo, err)
		}
	}
	want := [][]string{
		{"repository:a:pull"},
		{"repository:b:pull", "repository:a:pull"},
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("token requests' scopes (-want +got):\n%s", diff)
	}
}

// TestDescribeCachedByDigest checks that a digest, once described, is not
// fetched again: by digest it costs no request, by tag one HEAD.
func TestDescribeCachedByDigest(t *testing.T) {
	isolateDockerConfig(t, "")
	reg, reqs := newLoggedRegistry(t, func(h http.Handler) http.Handler { return h })
	digest := reg.push(t, "app:v1", buildImage(t, imageSpec{platform: platformAMD64, labels: map[string]string{"team": "x"}})).String()
	c := newClient(t)

	first, err := c.Describe(t.Context(), reg.host+"/app@"+digest)
	if err != nil {
		t.Fatalf("Describe: %s", err)
	}
	first.Labels["team"] = "edited by the caller"
	before := reqs.total()
	again, err := c.Describe(t.Context(), reg.host+"/app@"+digest)
	if err != nil {
		t.Fatalf("Describe again: %s", err)
	}
	if n := reqs.total() - before; n != 0 {
		t.Errorf("describing a described digest made %d requests, want 0", n)
	}
	if again.Labels["team"] != "x" {
		t.Errorf("cached labels = %v: a caller's edit reached the cache", again.Labels)
	}
	byTag, err := c.Describe(t.Context(), reg.host+"/app:v1")
	if err != nil {
		t.Fatalf("Describe by tag: %s", err)
	}
	if n := reqs.total() - before; n != 1 {
		t.Errorf("describing by tag made %d requests, want 1 (the HEAD)", n)
	}
	again.Labels["team"] = "edited by the caller"
	want := again
	want.Reference, want.Tag = reg.host+"/app:v1", "v1"
	want.Labels = map[string]string{"team": "x"}
	if diff := cmp.Diff(want, byTag); diff != "" {
		t.Errorf("Describe by tag (-want +got):\n%s", diff)
	}
}

// TestFailedHandshakeIsNotKept checks that a registry that could not be
// pinged once is pinged again by the next call, not failed for good.
func TestFailedHandshakeIsNotKept(t *testing.T) {
	isolateDockerConfig(t, "")
	var pings atomic.Int32
	reg, _ := newLoggedRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/" && pings.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	want := reg.push(t, "app:v1", buildImage(t, imageSpec{})).String()
	c := newClient(t, WithRetry(0))
	if _, err := c.Resolve(t.Context(), reg.host+"/app:v1"); err == nil {
		t.Fatalf("Resolve succeeded through a failed ping")
	}
	got, err := c.Resolve(t.Context(), reg.host+"/app:v1")
	if err != nil || got.Digest != want {
		t.Fatalf("Resolve after the registry recovered = %+v, %v; want %s", got, err, want)
	}
	if n := pings.Load(); n != 2 {
		t.Errorf("pings = %d, want 2", n)
	}
}
