package loopback

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		raw      string
		insecure bool
		want     string // "" for accepted
	}{
		{raw: "https://pinbot.example"},
		{raw: "http://127.0.0.1:8080"},
		{raw: "http://localhost/gate"},
		{raw: "http://pinbot.pinbot-system.svc", want: "would send the token in clear"},
		{raw: "http://pinbot.pinbot-system.svc", insecure: true},
		{raw: "https://u:p@pinbot.example", want: "put no credentials"},
		{raw: "ftp://x", want: "want http(s)"},
		{raw: "pinbot.example", want: "want http(s)"},
	} {
		_, err := CheckURL(tc.raw, tc.insecure)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v", tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckURL(%q) = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

// TestClientDropsTheCredentialOnAnotherOrigin: a server that redirects
// to another port of the same host gets the request there without the
// token; a redirect within the origin keeps it.
func TestClientDropsTheCredentialOnAnotherOrigin(t *testing.T) {
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	defer other.Close()
	var kept atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/here":
			http.Redirect(w, r, srv.URL+"/landed", http.StatusFound)
		case "/landed":
			if r.Header.Get("Authorization") != "" {
				kept.Add(1)
			}
		}
	}))
	defer srv.Close()
	c := Client(10 * time.Second)
	for _, path := range []string{"/away", "/here"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if leaked.Load() != 0 {
		t.Error("the token followed a redirect to another port")
	}
	if kept.Load() != 1 {
		t.Error("the token was dropped within the origin")
	}
}
