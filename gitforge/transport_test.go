package gitforge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/loopback"
)

func TestCleartext(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"http://192.0.2.2:5611", true},
		{"http://10.1.2.3", true},
		{"http://10.0.0.1:3000/gitea", true},
		{"http://gitea.example.com", true},
		{"http://localhost.example.com", true},
		{"http://0.0.0.0:3000", true},
		{"http://[::ffff:10.0.0.1]:3000", true},
		{"http://[fe80::1%25eth0]:3000", true},
		{"HTTP://gitea.example.com", true},
		{"http://localhost", false},
		{"http://LocalHost:3000", false},
		{"http://127.0.0.1:3000", false},
		{"http://127.10.0.1", false},
		{"http://[::1]:3000", false},
		{"https://192.0.2.2:5611", false},
		{"https://10.1.2.3", false},
		{"https://gitea.example.com", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := loopback.Cleartext(u); got != tc.want {
				t.Errorf("Cleartext(%s) = %t, want %t", tc.url, got, tc.want)
			}
		})
	}
}

// recorder is a loopback server that notes the Authorization header of
// every request it receives.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecorder(t *testing.T, serve http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.mu.Unlock()
		serve(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

// fakeAPI answers the two Gitea API calls DefaultBranch makes.
func fakeAPI(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch req.URL.Path {
	case "/api/v1/version":
		_, _ = w.Write([]byte(`{"version":"1.22.0"}`))
	case "/api/v1/repos/org/manifests":
		_, _ = w.Write([]byte(`{"name":"manifests","default_branch":"main"}`))
	default:
		http.NotFound(w, req)
	}
}

// TestTokenStaysOnItsOrigin points the API client and Git at a loopback
// forge that redirects every request once: to itself, to another port of
// the same host, or to another host name. The token follows only the
// redirect to the same origin.
func TestTokenStaysOnItsOrigin(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef01234567"
	ctx := context.Background()
	repo := gitforge.Repo{Owner: "org", Name: "manifests"}
	other := newRecorder(t, fakeAPI) // where the redirects lead
	_, port, _ := strings.Cut(other.Listener.Addr().String(), ":")

	for _, tc := range []struct {
		name string
		to   string // base URL of the redirect target; "" for the forge itself
	}{
		{name: "same origin"},
		{name: "another port of the same host", to: other.URL},
		{name: "another host", to: "http://localhost:" + port},
	} {
		for _, client := range []struct {
			name string
			opts []gitforge.GiteaOption
		}{
			{name: "default client"},
			{name: "own client", opts: []gitforge.GiteaOption{gitforge.WithHTTPClient(&http.Client{})}},
		} {
			t.Run(tc.name+"/"+client.name, func(t *testing.T) {
				var forge *recorder
				forge = newRecorder(t, func(w http.ResponseWriter, req *http.Request) {
					if req.URL.Query().Get("hop") == "" {
						to := tc.to
						if to == "" {
							to = forge.URL
						}
						http.Redirect(w, req, to+req.URL.Path+"?hop=1", http.StatusTemporaryRedirect)
						return
					}
					fakeAPI(w, req)
				})
				before := len(other.seen())
				g, err := gitforge.NewGitea(forge.URL, token, client.opts...)
				if err != nil {
					t.Fatal(err)
				}
				branch, err := g.DefaultBranch(ctx, repo)
				if err != nil || branch != "main" {
					t.Fatalf("DefaultBranch through the redirect = %q, %v; want main", branch, err)
				}
				got := forge.seen()
				if tc.to != "" {
					got = other.seen()[before:]
				}
				// The version probe and the repository, each before and
				// after its hop when the forge redirects to itself.
				want := []string{"", ""}
				if tc.to == "" {
					want = slices.Repeat([]string{"token " + token}, 4)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Authorization at the redirect target (-want +got):\n%s", diff)
				}
				for _, a := range forge.seen() {
					if a != "token "+token {
						t.Errorf("the forge itself got Authorization %q, want the token", a)
					}
				}
			})
		}
	}

	// Git: the first request (info/refs) carries the token as basic auth;
	// a redirect that leaves the origin must not.
	for _, tc := range []struct{ name, to string }{
		{name: "git, another port of the same host", to: other.URL},
		{name: "git, another host", to: "http://localhost:" + port},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forge := newRecorder(t, func(w http.ResponseWriter, req *http.Request) {
				http.Redirect(w, req, tc.to+req.URL.RequestURI(), http.StatusTemporaryRedirect)
			})
			before := len(other.seen())
			_, err := gitforge.RemoteHead(ctx, forge.URL+"/org/manifests.git", "main", gitforge.Auth{Token: token})
			if err == nil {
				t.Fatal("RemoteHead succeeded against a server that is no Git server")
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error leaks the token: %s", err)
			}
			if got := forge.seen(); len(got) == 0 || !strings.HasPrefix(got[0], "Basic ") {
				t.Fatalf("the forge got Authorization %q, want basic auth", got)
			}
			got := other.seen()[before:]
			if len(got) == 0 {
				t.Fatal("the redirect was not followed")
			}
			for _, a := range got {
				if a != "" {
					t.Errorf("the redirect target got Authorization %q, want none", a)
				}
			}
		})
	}
}
