package signin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func newSignIn(t *testing.T, key string) *SignIn {
	t.Helper()
	s, err := New(Config{Issuer: "https://sso.example.test", ClientID: "pinbot", RedirectURL: "https://pinbot.example.test/auth/callback", SessionKey: []byte(key)}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const key = "0123456789abcdef0123456789abcdef"

// withSession is a request carrying a session cookie sealed as purpose.
func withSession(t *testing.T, s *SignIn, purpose string, id Identity) *http.Request {
	t.Helper()
	sealed, err := s.seal.seal(purpose, id)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "https://pinbot.example.test/", nil)
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: sealed})
	return req
}

// TestSessions: a session is taken while it lasts, with the key it was
// signed with; an expired one, one signed with another key, a login
// cookie passed off as a session, and one without a user are not.
func TestSessions(t *testing.T) {
	s := newSignIn(t, key)
	now := time.Now()
	live := Identity{User: "olga", Groups: []string{"ops"}, Session: "s1", Expires: now.Add(time.Hour).Unix()}
	if id, ok := s.Session(withSession(t, s, "session", live)); !ok || id.User != "olga" || id.Groups[0] != "ops" {
		t.Errorf("a live session: %+v, %t", id, ok)
	}
	for _, tc := range []struct {
		name    string
		signer  *SignIn
		purpose string
		id      Identity
	}{
		{"expired", s, "session", Identity{User: "olga", Session: "s1", Expires: now.Add(-time.Second).Unix()}},
		{"another key", newSignIn(t, strings.Repeat("x", 32)), "session", live},
		{"a login cookie", s, "login", live},
		{"no user", s, "session", Identity{Session: "s1", Expires: live.Expires}},
	} {
		if id, ok := s.Session(withSession(t, tc.signer, tc.purpose, tc.id)); ok {
			t.Errorf("%s: taken as %+v", tc.name, id)
		}
	}
}

// TestCheckForm: a POST of the session's own page passes; without the
// token, with another session's, from another site or origin, it is
// refused, saying why.
func TestCheckForm(t *testing.T) {
	s := newSignIn(t, key)
	id := Identity{User: "olga", Session: "s1"}
	post := func(token, origin, site string) error {
		req := httptest.NewRequest(http.MethodPost, "https://pinbot.example.test/actions/pause", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		return s.CheckForm(req, id)
	}
	if err := post(s.CSRF(id), "https://pinbot.example.test", "same-origin"); err != nil {
		t.Errorf("the page's own form: %s", err)
	}
	for _, tc := range []struct{ name, token, origin, site, want string }{
		{"no token", "", "", "", "CSRF token"},
		{"another session's token", s.CSRF(Identity{User: "olga", Session: "s2"}), "", "", "CSRF token"},
		{"another site", s.CSRF(id), "", "cross-site", "another site"},
		{"another origin", s.CSRF(id), "https://evil.example", "", "another origin"},
	} {
		if err := post(tc.token, tc.origin, tc.site); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// TestNextStaysOnSite: after sign-in a browser goes only to a path of
// pinbot's own, never to another host.
func TestNextStaysOnSite(t *testing.T) {
	for in, want := range map[string]string{"/releases/a/b": "/releases/a/b", "https://evil.example/": "/", "//evil.example/x": "/", `/\evil.example`: "/", "": "/"} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNewRefusesABadConfig: a short session key and a redirect URL that
// is not pinbot's callback are errors that say so.
func TestNewRefusesABadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Issuer: "https://sso", ClientID: "p", RedirectURL: "https://p/auth/callback", SessionKey: []byte("short")}, "session key is 5 bytes"},
		{Config{Issuer: "https://sso", ClientID: "p", RedirectURL: "https://p/elsewhere", SessionKey: []byte(key)}, "ending in /auth/callback"},
	} {
		if _, err := New(tc.cfg, http.DefaultClient); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.cfg, err, tc.want)
		}
	}
}
