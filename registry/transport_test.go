package registry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/poll"
)

// failing answers the first n manifest requests with status (and
// Retry-After, when set), counting every manifest request.
func failing(n int, status int, retryAfter string, attempts *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isManifest(r) {
				next.ServeHTTP(w, r)
				return
			}
			if int(attempts.Add(1)) <= n {
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				w.WriteHeader(status)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestRetry(t *testing.T) {
	isolateDockerConfig(t, "")
	const forever = 1 << 30
	for _, tc := range []struct {
		name         string
		failures     int
		status       int
		retryAfter   string
		budget       time.Duration
		wantStatus   int // 0: success
		wantAttempts int32
		minElapsed   time.Duration
	}{
		{name: "429 with Retry-After, then success", failures: 1, status: 429, retryAfter: "1", budget: 10 * time.Second,
			wantAttempts: 2, minElapsed: time.Second},
		{name: "500 twice, then success", failures: 2, status: 500, budget: 10 * time.Second, wantAttempts: 3},
		{name: "502 then 200", failures: 1, status: 502, budget: 10 * time.Second, wantAttempts: 2},
		{name: "503 until the budget is spent", failures: forever, status: 503, budget: 1500 * time.Millisecond,
			wantStatus: 503, wantAttempts: -1},
		{name: "429 asking for more than the budget", failures: forever, status: 429, retryAfter: "3600", budget: 10 * time.Second,
			wantStatus: 429, wantAttempts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			reg := newTestRegistry(t, failing(tc.failures, tc.status, tc.retryAfter, &attempts))
			want := reg.push(t, "app:v1", buildImage(t, imageSpec{})).String()
			ref := reg.host + "/app:v1"
			began := time.Now()
			got, err := newClient(t, WithRetry(tc.budget)).Resolve(t.Context(), ref)
			elapsed := time.Since(began)
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("Resolve: %s", err)
				}
				if got.Digest != want {
					t.Errorf("digest = %s, want %s", got.Digest, want)
				}
			} else {
				var e *Error
				if !errors.As(err, &e) || e.StatusCode != tc.wantStatus {
					t.Fatalf("Resolve = %v, want an *Error with status %d", err, tc.wantStatus)
				}
				for _, s := range []string{ref, reg.host, http.StatusText(tc.wantStatus)} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %q", err, s)
					}
				}
				if elapsed > tc.budget+5*time.Second {
					t.Errorf("gave up after %s, budget %s", elapsed, tc.budget)
				}
			}
			n := attempts.Load()
			switch {
			case tc.wantAttempts >= 0 && n != tc.wantAttempts:
				t.Errorf("manifest requests = %d, want %d", n, tc.wantAttempts)
			case tc.wantAttempts < 0 && n < 2:
				t.Errorf("manifest requests = %d, want retries", n)
			}
			if elapsed < tc.minElapsed {
				t.Errorf("succeeded after %s; Retry-After asked for %s", elapsed, tc.minElapsed)
			}
		})
	}
}

// TestConcurrencyLimit holds manifest requests in the handler and checks
// that no more than the limit reach one host at once, while another host is
// not held up.
func TestConcurrencyLimit(t *testing.T) {
	isolateDockerConfig(t, "")
	const limit, callers = 2, 6
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	gated := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isManifest(r) {
				next.ServeHTTP(w, r)
				return
			}
			n := inFlight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			inFlight.Add(-1)
			next.ServeHTTP(w, r)
		})
	})
	free := newTestRegistry(t, nil)
	gated.push(t, "app:v1", buildImage(t, imageSpec{}))
	free.push(t, "app:v1", buildImage(t, imageSpec{}))

	c := newClient(t, WithConcurrency(limit))
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := c.Resolve(t.Context(), gated.host+"/app:v1")
			errs <- err
		})
	}
	poll.True(t, 10*time.Second, "the first requests to arrive", func() bool { return inFlight.Load() >= limit })
	if _, err := c.Resolve(t.Context(), free.host+"/app:v1"); err != nil {
		t.Errorf("another host was held up: %s", err)
	}
	for released := 0; released < callers; released++ {
		want := int32(min(limit, callers-released))
		poll.True(t, 10*time.Second, "requests in flight", func() bool { return inFlight.Load() >= want })
		release <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Resolve: %s", err)
		}
	}
	if got := peak.Load(); got != limit {
		t.Errorf("peak requests in flight = %d, want %d", got, limit)
	}
}

// TestPlainHTTPOnlyWhereAllowed sends every connection, whatever the host
// name, to one plain-HTTP registry on loopback, and checks which hosts were
// spoken to in plain HTTP. A TLS handshake reaching the plain server never
// reaches its handler, so the handler counts plain-HTTP requests only.
func TestPlainHTTPOnlyWhereAllowed(t *testing.T) {
	isolateDockerConfig(t, "")
	var plain atomic.Int32
	reg := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			plain.Add(1)
			next.ServeHTTP(w, r)
		})
	})
	reg.push(t, "app:v1", buildImage(t, imageSpec{}))
	_, port, err := net.SplitHostPort(reg.host)
	if err != nil {
		t.Fatal(err)
	}
	dialAll := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, reg.host)
	}
	for _, tc := range []struct {
		name      string
		host      string
		insecure  []string
		wantPlain bool
	}{
		{"127.0.0.1", reg.host, nil, true},
		{"127.0.0.0/8", "127.0.0.2:" + port, nil, true},
		{"localhost", "localhost:" + port, nil, true},
		{"public name", "registry.example:" + port, nil, false},
		{"public name listed insecure with port", "registry.example:" + port, []string{"registry.example:" + port}, true},
		{"public name listed insecure without port", "registry.example:" + port, []string{"Registry.Example"}, true},
		{"other host listed", "registry.example:" + port, []string{"other.example"}, false},
		{"RFC 1918 address ggcr would try in plain HTTP", "10.1.2.3:" + port, nil, false},
		{"192.168 address", "192.168.7.8:" + port, nil, false},
		{"name ending in .localhost", "reg.localhost:" + port, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := &http.Transport{DialContext: dialAll}
			defer base.CloseIdleConnections()
			before := plain.Load()
			_, err := newClient(t, WithTransport(base), WithInsecure(tc.insecure...), WithRetry(0)).Resolve(t.Context(), tc.host+"/app:v1")
			gotPlain := plain.Load() > before
			if gotPlain != tc.wantPlain {
				t.Errorf("spoke plain HTTP to %s: %t, want %t (err: %v)", tc.host, gotPlain, tc.wantPlain, err)
			}
			if (err == nil) != tc.wantPlain {
				t.Errorf("Resolve error = %v, want success %t", err, tc.wantPlain)
			}
		})
	}
}

func TestPlainHTTPAllowed(t *testing.T) {
	c := newClient(t, WithInsecure("reg.internal", "other.internal:5000", "[fd00::1]:5000"))
	for host, want := range map[string]bool{
		"127.0.0.1:5000":      true,
		"127.9.9.9":           true,
		"localhost":           true,
		"LOCALHOST:80":        true,
		"[::1]:5000":          true,
		"::1":                 true,
		"reg.internal":        true,
		"reg.internal:443":    true,
		"other.internal:5000": true,
		"other.internal:5001": false,
		"other.internal":      false,
		"[fd00::1]:5000":      true,
		"10.0.0.1:5000":       false,
		"172.16.0.1":          false,
		"192.168.1.1:80":      false,
		"foo.localhost:5000":  false,
		"index.docker.io":     false,
		"registry.example":    false,
	} {
		if got := c.plainHTTPAllowed(host); got != want {
			t.Errorf("plainHTTPAllowed(%q) = %t, want %t", host, got, want)
		}
	}
}

// TestParseScheme checks the scheme go-containerregistry will use for a
// reference the Client parses. (For RFC 1918 addresses and *.localhost ggcr
// says "http" on its own; the hostTransport refuses those requests, as
// TestPlainHTTPOnlyWhereAllowed shows.)
func TestParseScheme(t *testing.T) {
	c := newClient(t, WithInsecure("registry.internal:5000"))
	for ref, want := range map[string]string{
		"nginx":                                "https",
		"registry.example/app:v1":              "https",
		"registry.example:5000/app:v1":         "https",
		"registry.internal:5000/app:v1":        "http",
		"registry.internal:5001/app:v1":        "https",
		"127.0.0.1:5000/app:v1":                "http",
		"127.0.0.5:5000/app:v1":                "http",
		"localhost:5000/app:v1":                "http",
		"[::1]:5000/app:v1":                    "http",
		"ghcr.io/org/app@sha256:" + hex64('a'): "https",
	} {
		r, err := c.parse(ref)
		if err != nil {
			t.Errorf("parse(%q): %s", ref, err)
			continue
		}
		if got := r.Context().Registry.Scheme(); got != want {
			t.Errorf("scheme of %q = %s, want %s", ref, got, want)
		}
	}
}

func hex64(c byte) string { return strings.Repeat(string(c), 64) }

// TestTLSRegistry checks that an HTTPS registry works through the guard.
func TestTLSRegistry(t *testing.T) {
	isolateDockerConfig(t, "")
	plain := newTestRegistry(t, nil)
	digest := plain.push(t, "app:v1", buildImage(t, imageSpec{})).String()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Proxy to the plain registry, so both serve the same content.
		r.URL.Scheme, r.URL.Host = "http", plain.raw
		r.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer srv.Close()
	// Reach it by a public-looking name so plain HTTP is not allowed.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	base := srv.Client().Transport.(*http.Transport).Clone()
	base.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, strings.TrimPrefix(srv.URL, "https://"))
	}
	base.TLSClientConfig.ServerName = "example.com" // httptest's certificate names example.com
	got, err := newClient(t, WithTransport(base)).Resolve(t.Context(), "registry.example:"+port+"/app:v1")
	if err != nil {
		t.Fatalf("Resolve over TLS: %s", err)
	}
	if got.Digest != digest {
		t.Errorf("digest = %s, want %s", got.Digest, digest)
	}
}
