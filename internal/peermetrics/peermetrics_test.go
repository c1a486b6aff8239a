package peermetrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCountsByResult: each request is counted once, by its status class,
// and a request with no response as error.
func TestCountsByResult(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: Registry(nil)}
	for _, p := range []string{"/", "/", "/missing"} {
		resp, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if _, err := (&http.Client{Transport: Forge(nil)}).Get("http://127.0.0.1:1/"); err == nil {
		t.Fatal("a request to a closed port succeeded")
	}
	for _, tc := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(registry.WithLabelValues("2xx")), 2, "registry 2xx"},
		{testutil.ToFloat64(registry.WithLabelValues("4xx")), 1, "registry 4xx"},
		{testutil.ToFloat64(git.WithLabelValues("forge", "error")), 1, "forge error"},
		{testutil.ToFloat64(git.WithLabelValues("git", "2xx")), 0, "git 2xx"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}
