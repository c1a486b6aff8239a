package signin

import (
	"context"
	"crypto/subtle"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
)

// Config is the OpenID Connect sign-in: serve's config, dashboard.oidc.
type Config struct {
	// Issuer is the identity provider's issuer URL; its discovery
	// document is read at the first sign-in.
	Issuer string
	// ClientID and ClientSecret are pinbot's client at the provider.
	ClientID     string
	ClientSecret string
	// RedirectURL is pinbot's callback as the provider knows it:
	// https://pinbot.example.com/auth/callback. Its scheme decides
	// whether cookies are Secure.
	RedirectURL string
	// Scopes are asked besides openid: profile, email, groups.
	Scopes []string
	// UsernameClaim names the user for RBAC (default
	// preferred_username, then email); GroupsClaim their groups
	// (default groups).
	UsernameClaim, GroupsClaim string
	// SessionKey signs sessions: 32 bytes or more, the same on every
	// replica.
	SessionKey []byte
	// SessionTTL is how long a session lasts (default 8h).
	SessionTTL time.Duration
}

// SignIn is the OpenID Connect sign-in and its sessions.
type SignIn struct {
	cfg    Config
	seal   sealer
	secure bool
	client *http.Client
	now    func() time.Time

	// The provider, read from its discovery document on the first
	// sign-in (an identity provider down when serve starts stops
	// nobody's reconcile loop), then kept.
	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	idp      *oidc.Provider
}

// New checks cfg and returns the sign-in; client (its TLS trust and
// timeout) reaches the provider.
func New(cfg Config, client *http.Client) (*SignIn, error) {
	switch {
	case cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "":
		return nil, fmt.Errorf("dashboard.oidc needs issuer, clientID and redirectURL")
	case len(cfg.SessionKey) < 32:
		return nil, fmt.Errorf("dashboard.oidc: the session key is %d bytes; want 32 or more, the same on every replica", len(cfg.SessionKey))
	}
	redirect, err := url.Parse(cfg.RedirectURL)
	if err != nil || redirect.Path != CallbackPath {
		return nil, fmt.Errorf("dashboard.oidc.redirectURL %q: want pinbot's own URL ending in %s", cfg.RedirectURL, CallbackPath)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	return &SignIn{cfg: cfg, seal: sealer{key: cfg.SessionKey}, secure: redirect.Scheme == "https", client: client, now: time.Now}, nil
}

// provider is the OAuth2 config and ID token verifier, from the issuer's
// discovery document on first use.
func (s *SignIn) provider(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.oauth != nil {
		return s.oauth, s.verifier, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.client), s.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("the identity provider %s: %w", s.cfg.Issuer, redact.Error(err))
	}
	scopes := append([]string{oidc.ScopeOpenID}, slices.DeleteFunc(slices.Clone(s.cfg.Scopes), func(sc string) bool { return sc == oidc.ScopeOpenID })...)
	s.oauth = &oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: s.cfg.RedirectURL, Scopes: scopes}
	s.verifier = p.VerifierContext(oidc.ClientContext(context.WithoutCancel(ctx), s.client), &oidc.Config{ClientID: s.cfg.ClientID})
	s.idp = p
	return s.oauth, s.verifier, nil
}

// The sign-in's paths.
const (
	LoginPath    = "/auth/login"
	CallbackPath = "/auth/callback"
	LogoutPath   = "/auth/logout"
)

// loginCookie holds a login in flight, from the redirect to the provider
// to its callback.
const loginCookie = "pinbot_login"

// login is what the callback checks: the state and nonce sent, the PKCE
// verifier, and where to go after.
type login struct {
	State, Nonce, Verifier, Next string
	Expires                      int64
}

// Routes serves the login, its callback and the logout on mux.
func (s *SignIn) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+LoginPath, s.login)
	mux.HandleFunc("GET "+CallbackPath, s.callback)
	mux.HandleFunc("POST "+LogoutPath, s.logout)
}

func (s *SignIn) login(w http.ResponseWriter, req *http.Request) {
	l := login{State: randomID(), Nonce: randomID(), Verifier: oauth2.GenerateVerifier(), Next: localPath(req.URL.Query().Get("next")),
		Expires: s.now().Add(10 * time.Minute).Unix()}
	oauth, _, err := s.provider(req.Context())
	if err != nil {
		logctx.From(req.Context()).Warn("sign-in unavailable", "error", err)
		http.Error(w, "sign-in unavailable: "+err.Error(), http.StatusBadGateway)
		return
	}
	sealed, err := s.seal.seal("login", l)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Lax, not Strict: the provider's redirect back is a navigation from
	// another site, and must carry it.
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: sealed, Path: "/auth/", MaxAge: 600, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, req, oauth.AuthCodeURL(l.State, oidc.Nonce(l.Nonce), oauth2.S256ChallengeOption(l.Verifier)), http.StatusFound)
}

func (s *SignIn) callback(w http.ResponseWriter, req *http.Request) {
	log := logctx.From(req.Context())
	id, next, err := s.finish(req)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/auth/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	if err != nil {
		log.Warn("sign-in refused", "error", err, "from", req.RemoteAddr)
		http.Error(w, "sign-in refused: "+err.Error(), http.StatusForbidden)
		return
	}
	sealed, err := s.seal.seal("session", id)
	if err == nil && len(sealed) > maxCookie {
		err = ErrTooBig
	}
	if err != nil {
		http.Error(w, "sign-in refused: "+err.Error(), http.StatusForbidden)
		return
	}
	log.Info("signed in", "user", id.User, "groups", id.Groups, "from", req.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sealed, Path: "/", Expires: time.Unix(id.Expires, 0), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	// A page, not a redirect: a Strict cookie is not sent on a redirect
	// that began at the provider's site.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = continuePage.Execute(w, next)
}

var continuePage = template.Must(template.New("").Parse(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={{.}}"><title>Signed in</title><p>Signed in. <a href="{{.}}">Continue</a>.</p>`))

// finish checks the callback against the login in flight, exchanges the
// code and verifies the ID token: issuer, audience, expiry, nonce.
func (s *SignIn) finish(req *http.Request) (Identity, string, error) {
	c, err := req.Cookie(loginCookie)
	if err != nil {
		return Identity{}, "", fmt.Errorf("no login in flight (it expires after 10 minutes; start again at %s)", LoginPath)
	}
	var l login
	if err := s.seal.open("login", c.Value, &l); err != nil || s.now().Unix() >= l.Expires {
		return Identity{}, "", fmt.Errorf("the login in flight is not pinbot's or has expired")
	}
	q := req.URL.Query()
	if e := q.Get("error"); e != "" {
		return Identity{}, "", fmt.Errorf("the identity provider says %s: %s", e, q.Get("error_description"))
	}
	if q.Get("state") != l.State {
		return Identity{}, "", fmt.Errorf("the state does not match the login in flight")
	}
	oauth, verifier, err := s.provider(req.Context())
	if err != nil {
		return Identity{}, "", err
	}
	ctx := oidc.ClientContext(req.Context(), s.client)
	tok, err := oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(l.Verifier))
	if err != nil {
		return Identity{}, "", fmt.Errorf("exchanging the code: %w", redact.Error(err))
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return Identity{}, "", fmt.Errorf("the token response has no id_token")
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, "", fmt.Errorf("the ID token: %w", err)
	}
	if idt.Nonce != l.Nonce {
		return Identity{}, "", fmt.Errorf("the ID token's nonce is not the login's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, "", err
	}
	if _, ok := claims[s.cfg.GroupsClaim]; !ok || s.username(claims) == "" {
		// Providers may keep the profile out of the ID token and serve
		// it from their UserInfo endpoint, for the same subject.
		if err := s.userInfo(ctx, tok, idt.Subject, claims); err != nil {
			return Identity{}, "", err
		}
	}
	id := Identity{User: s.username(claims), Groups: groups(claims[s.cfg.GroupsClaim]), Session: randomID(), Expires: s.now().Add(s.cfg.SessionTTL).Unix()}
	if id.User == "" {
		return Identity{}, "", fmt.Errorf("the ID token has no %s claim", s.usernameClaims()[0])
	}
	return id, l.Next, nil
}

// userInfo adds to claims what the provider's UserInfo endpoint says of
// subject, without overriding the ID token's.
func (s *SignIn) userInfo(ctx context.Context, tok *oauth2.Token, subject string, claims map[string]any) error {
	s.mu.Lock()
	idp := s.idp
	s.mu.Unlock()
	if idp.UserInfoEndpoint() == "" {
		return nil
	}
	ui, err := idp.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return fmt.Errorf("the provider's UserInfo: %w", redact.Error(err))
	}
	if ui.Subject != subject {
		return fmt.Errorf("the provider's UserInfo is of another subject")
	}
	var more map[string]any
	if err := ui.Claims(&more); err != nil {
		return err
	}
	for k, v := range more {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return nil
}

func (s *SignIn) usernameClaims() []string {
	if s.cfg.UsernameClaim != "" {
		return []string{s.cfg.UsernameClaim}
	}
	return []string{"preferred_username", "email"}
}

func (s *SignIn) username(claims map[string]any) string {
	for _, c := range s.usernameClaims() {
		if v, ok := claims[c].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// groups reads a groups claim: a list of strings, or one string.
func groups(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, g := range v {
			if s, ok := g.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (s *SignIn) logout(w http.ResponseWriter, req *http.Request) {
	if id, ok := s.seal.session(req, s.now()); ok {
		if err := s.CheckForm(req, id); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		logctx.From(req.Context()).Info("signed out", "user", id.User)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, req, "/", http.StatusSeeOther)
}

// Session is the signed-in person req is from, if any.
func (s *SignIn) Session(req *http.Request) (Identity, bool) { return s.seal.session(req, s.now()) }

// CSRF is the token id's forms carry.
func (s *SignIn) CSRF(id Identity) string { return s.seal.csrf(id) }

// CheckForm refuses a POST of id's session that a page of pinbot's did
// not send: without the session's CSRF token, or from another origin
// (the browser's Origin and Sec-Fetch-Site say so).
func (s *SignIn) CheckForm(req *http.Request, id Identity) error {
	if site := req.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fmt.Errorf("refused: a request from another site (%s)", site)
	}
	if o := req.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || u.Host != req.Host {
			return fmt.Errorf("refused: a request from another origin (%s)", o)
		}
	}
	if !hmacEqual(req.PostFormValue("csrf"), s.seal.csrf(id)) {
		return fmt.Errorf("refused: the form's CSRF token is missing or not this session's; reload the page")
	}
	return nil
}

func hmacEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// localPath is next when it is a path on this site, else "/": never a
// redirect to another host after sign-in.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

// Issuer is the identity provider's issuer URL.
func (s *SignIn) Issuer() string { return s.cfg.Issuer }
