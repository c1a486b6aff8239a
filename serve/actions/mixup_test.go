package actions_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/oidcop"
	"pinbot.dev/pinbot/serve/signin"
)

// TestSignInRefusesAnotherIssuerOrAudience: a hostile network between
// pinbot and its OpenID Provider swaps the ID token of olga's sign-in for
// a real one that carries her login's nonce but was issued to another
// client of the same provider ("api", not pinbot's "web"), or by another
// provider. pinbot refuses both (the audience; the issuer and its keys),
// sets no session, and signs olga in when nothing is swapped.
func TestSignInRefusesAnotherIssuerOrAudience(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := "http://" + ln.Addr().String()
	redirect := self + signin.CallbackPath
	issuer := oidcop.Start(t, filepath.Join(bin, "oidc"), redirect)
	other := oidcop.Start(t, filepath.Join(bin, "oidc"), redirect)
	var swap atomic.Pointer[string] // the ID token put in place of the provider's
	client := &http.Client{Timeout: 10 * time.Second, Transport: swapper{&swap}}
	in, err := signin.New(signin.Config{Issuer: issuer, ClientID: "web", ClientSecret: "secret", RedirectURL: redirect,
		Scopes: []string{"profile", "email"}, SessionKey: []byte(sesKey)}, client)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	in.Routes(mux)
	mux.Handle("/", signin.Guard{SignIn: in}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id, _ := signin.From(req.Context())
		io.WriteString(w, "page for "+id.User)
	})))
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name      string
		from      string // the provider of the swapped token, "" for none
		client    string
		signedIn  bool
		refusedAs string
	}{
		{name: "another client's token", from: issuer, client: "api", refusedAs: `expected audience "web" got ["api"]`},
		{name: "another provider's token", from: other, client: "web", refusedAs: "failed to verify signature"},
		{name: "nothing swapped", signedIn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			olga := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: stopAt(self)}
			// pinbot's login sends olga to the provider, with a nonce.
			first := *olga
			first.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp := do(t, &first, http.MethodGet, self+signin.LoginPath+"?next=/", nil)
			resp.Body.Close()
			auth, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || auth.Query().Get("nonce") == "" {
				t.Fatalf("pinbot's login: %s, Location %q", resp.Status, resp.Header.Get("Location"))
			}
			swap.Store(nil)
			if tc.from != "" {
				tok := idToken(t, tc.from, tc.client, redirect, auth.Query().Get("nonce"))
				swap.Store(&tok)
			}
			resp = login(t, olga, auth.String(), self)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.signedIn != (resp.StatusCode == http.StatusOK) || !tc.signedIn && !strings.Contains(string(body), tc.refusedAs) {
				t.Fatalf("the callback: %s %s; want signed in %v, else refused naming %q", resp.Status, body, tc.signedIn, tc.refusedAs)
			}
			page := do(t, olga, http.MethodGet, self+"/", nil)
			got, _ := io.ReadAll(page.Body)
			page.Body.Close()
			if signedIn := page.StatusCode == http.StatusOK && string(got) == "page for olga"; signedIn != tc.signedIn {
				t.Errorf("the page after the callback: %s %q; want signed in %v", page.Status, got, tc.signedIn)
			}
		})
	}
}

// swapper puts the ID token *to in the token endpoint's answer, when set.
type swapper struct{ to *atomic.Pointer[string] }

func (s swapper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	tok := s.to.Load()
	if err != nil || tok == nil || !strings.HasSuffix(req.URL.Path, "/token") {
		return resp, err
	}
	var answer map[string]any
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(raw, &answer); err == nil && answer["id_token"] != nil {
		answer["id_token"] = *tok
		raw, _ = json.Marshal(answer)
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// idToken signs olga in at provider's authorize endpoint as client, with
// nonce, and exchanges the code for the ID token it issues.
func idToken(t *testing.T, provider, client, redirect, nonce string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: stopAt(strings.TrimSuffix(redirect, signin.CallbackPath))}
	var ends struct {
		Authorize string `json:"authorization_endpoint"`
		Token     string `json:"token_endpoint"`
	}
	disc := do(t, c, http.MethodGet, strings.TrimSuffix(provider, "/")+"/.well-known/openid-configuration", nil)
	if err := json.NewDecoder(disc.Body).Decode(&ends); err != nil {
		t.Fatal(err)
	}
	disc.Body.Close()
	q := url.Values{"client_id": {client}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"openid profile"}, "state": {"s"}, "nonce": {nonce}}
	resp := login(t, c, ends.Authorize+"?"+q.Encode(), "")
	resp.Body.Close()
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || cb.Query().Get("code") == "" {
		t.Fatalf("signing in at %s as %s: %s, Location %q", provider, client, resp.Status, resp.Header.Get("Location"))
	}
	tok := do(t, &http.Client{Timeout: 10 * time.Second}, http.MethodPost, ends.Token, url.Values{
		"grant_type": {"authorization_code"}, "code": {cb.Query().Get("code")}, "redirect_uri": {redirect}, "client_id": {client}, "client_secret": {"secret"}})
	defer tok.Body.Close()
	var answer struct {
		IDToken string `json:"id_token"`
	}
	if err := json.NewDecoder(tok.Body).Decode(&answer); err != nil || answer.IDToken == "" {
		t.Fatalf("the token endpoint of %s: %s, %v", provider, tok.Status, err)
	}
	return answer.IDToken
}

// login follows authorize to the provider's login form, signs olga in,
// and returns the answer at the redirect back: pinbot's callback run (to
// is pinbot's URL), or the redirect itself (to is "").
func login(t *testing.T, c *http.Client, authorize, to string) *http.Response {
	t.Helper()
	resp := do(t, c, http.MethodGet, authorize, nil)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("the provider's login form: %s\n%s", resp.Status, page)
	}
	u, _ := url.Parse(authorize)
	resp = do(t, c, http.MethodPost, u.Scheme+"://"+u.Host+"/login/username", url.Values{"id": {string(m[1])}, "username": {"olga"}, "password": {"olga-pw"}})
	if to == "" {
		return resp
	}
	next := resp.Header.Get("Location")
	resp.Body.Close()
	if !strings.HasPrefix(next, to) {
		t.Fatalf("the provider sent olga to %q, not back to pinbot", next)
	}
	return do(t, c, http.MethodGet, next, nil)
}

// stopAt stops following redirects at a URL of prefix: the caller reads
// where it was sent.
func stopAt(prefix string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), prefix) {
			return http.ErrUseLastResponse
		}
		return nil
	}
}

func do(t *testing.T, c *http.Client, method, u string, form url.Values) *http.Response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
