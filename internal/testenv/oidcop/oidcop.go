// Package oidcop runs the OpenID Provider peer (bin/oidc, zitadel's
// example OP, built by make oidc) for tests, with two people: olga, an
// operator, and vic, a viewer. A Person signs in through the provider's
// own login form, as a browser would, and then acts on pinbot's pages
// with the session cookie it was given.
package oidcop

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/poll"
)

// Start runs the provider bin on a free loopback port, registering
// redirect as its client's redirect URI, and returns its issuer. It stops
// when the test ends.
func Start(t *testing.T, bin, redirect string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	users := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(users, []byte(`{
 "u1": {"ID": "u1", "Username": "olga", "Password": "olga-pw", "FirstName": "Olga", "LastName": "Op", "Email": "olga@example.test", "EmailVerified": true, "PreferredLanguage": "en"},
 "u2": {"ID": "u2", "Username": "vic", "Password": "vic-pw", "FirstName": "Vic", "LastName": "Viewer", "Email": "vic@example.test", "EmailVerified": true, "PreferredLanguage": "en"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+port, "USERS_FILE="+users, "REDIRECT_URI="+redirect)
	log, err := os.Create(filepath.Join(t.TempDir(), "oidc.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("the OpenID Provider (make oidc): %s", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	issuer := "http://localhost:" + port + "/"
	poll.Until(t, 20*time.Second, "the OpenID Provider's discovery", func() (bool, string) {
		resp, err := http.Get(issuer + ".well-known/openid-configuration")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return issuer
}

// Person is one person's cookie jar on pinbot's pages at Base.
type Person struct {
	t    *testing.T
	C    *http.Client
	Base string
}

// SignIn signs user in to the pages at base (whose sign-in starts at
// loginPath) through issuer's login form.
func SignIn(t *testing.T, base, loginPath, issuer, user, password string) *Person {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	p := &Person{t: t, Base: base, C: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
	page := p.Get(loginPath+"?next=/", http.StatusOK)
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the provider's login form:\n%s", page)
	}
	resp, err := p.C.PostForm(strings.TrimSuffix(issuer, "/")+"/login/username", url.Values{"id": {m[1]}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Signed in") {
		t.Fatalf("signing in as %s: %s\n%s", user, resp.Status, body)
	}
	return p
}

// Get reads path (on Base when it starts with "/") as a page, failing
// the test unless it answers want.
func (p *Person) Get(path string, want int) string {
	p.t.Helper()
	u := path
	if strings.HasPrefix(path, "/") {
		u = p.Base + path
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := p.C.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		p.t.Fatalf("GET %s: %s, want %d:\n%s", path, resp.Status, want, body)
	}
	return string(body)
}

// Post submits a form to path as the page's own would, with origin as
// its Origin ("" for none), and does not follow the answer's redirect.
func (p *Person) Post(path string, form url.Values, origin string) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.Base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c := *p.C
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// ConfirmForm is the confirmation page of an action at
// /actions/VERB?query, and its form's hidden fields.
func (p *Person) ConfirmForm(query url.Values, verb string) (string, url.Values) {
	p.t.Helper()
	page := p.Get("/actions/"+verb+"?"+query.Encode(), http.StatusOK)
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], unescape(m[2]))
	}
	return page, form
}

func unescape(s string) string {
	return strings.NewReplacer("&#43;", "+", "&#34;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">", "&#39;", "'").Replace(s)
}
