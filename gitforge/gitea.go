package gitforge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/peermetrics"
	"pinbot.dev/pinbot/internal/redact"
)

// Sentinels an *APIError matches with errors.Is, for callers that branch on
// the kind of failure: a bad token is configuration (stop and say so), not
// a transient fault (retry).
var (
	ErrUnauthorized = errors.New("gitea rejected the token")
	ErrNotFound     = errors.New("not found on gitea")
)

// APIError is a failed Gitea API call.
type APIError struct {
	// Op names the operation and its operand, e.g.
	// "creating pull request in org/manifests".
	Op string
	// StatusCode is the HTTP status, or 0 when no response came back.
	StatusCode int
	// TokenSource says where the token came from ("--token-file F",
	// "$PINBOT_GITEA_TOKEN"), for a 401 or 403; "" when unknown.
	TokenSource string
	// Err is the SDK's error.
	Err error
}

// Error names the operation and the status, with the token redacted.
func (e *APIError) Error() string {
	var msg string
	switch e.StatusCode {
	case 0:
		msg = fmt.Sprintf("%s: %s", e.Op, e.Err)
	case http.StatusUnauthorized:
		msg = fmt.Sprintf("%s: Gitea rejected the token%s (401 Unauthorized): %s", e.Op, e.from(), e.Err)
	case http.StatusForbidden:
		msg = fmt.Sprintf("%s: the token%s lacks permission (403 Forbidden; pinbot needs write:repository and write:issue): %s", e.Op, e.from(), e.Err)
	default:
		msg = fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.StatusCode, e.Err)
	}
	return redact.String(msg)
}

// from names the token's source in a message.
func (e *APIError) from() string {
	if e.TokenSource == "" {
		return ""
	}
	return " from " + e.TokenSource
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.Err }

// Is matches ErrUnauthorized (401) and ErrNotFound (404).
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	}
	return false
}

// Repo names a repository on the forge.
type Repo struct{ Owner, Name string }

// ParseRepo parses "owner/name".
func ParseRepo(s string) (Repo, error) {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return Repo{}, fmt.Errorf("parsing repository %q: want OWNER/NAME", s)
	}
	return Repo{Owner: owner, Name: strings.TrimSuffix(name, ".git")}, nil
}

// String returns "owner/name".
func (r Repo) String() string { return r.Owner + "/" + r.Name }

// Gitea is a client of one Gitea server's API, safe for concurrent use.
type Gitea struct {
	url     string   // the base URL without a trailing slash, for the SDK
	baseURL *url.URL // the base URL as given, parsed
	hc      *http.Client
	auth    Auth   // for Git over HTTP: the same token and CA
	source  string // where the token came from, for errors

	mu      sync.Mutex
	version string // the server's, probed once on first use
	self    string // the token's account, read once (Self)
}

// GiteaOption configures NewGitea.
type GiteaOption func(*giteaOptions) error

type giteaOptions struct {
	hc     *http.Client
	caFile string
	source string
}

// WithTokenSource says where the token came from ("--token-file F",
// "$PINBOT_GITEA_TOKEN", "forge.tokenFile F"), so that a 401 or 403
// names it.
func WithTokenSource(source string) GiteaOption {
	return func(o *giteaOptions) error { o.source = source; return nil }
}

// WithCAFile trusts the PEM certificates in path, besides the system roots,
// for a Gitea behind a private CA or with a self-signed certificate.
func WithCAFile(path string) GiteaOption {
	return func(o *giteaOptions) error { o.caFile = path; return nil }
}

// WithHTTPClient sends every request through hc. Default: a client with
// the default transport (plus WithCAFile) and a 60 s timeout per request.
// Either way the token goes only to the requests for baseURL's origin
// (scheme, host and port), not to a redirect elsewhere.
func WithHTTPClient(hc *http.Client) GiteaOption {
	return func(o *giteaOptions) error { o.hc = hc; return nil }
}

// NewGitea returns a client of the Gitea at baseURL (e.g.
// https://gitea.example.com) authenticating with token. It makes no request:
// the server's version is read on first use.
func NewGitea(baseURL, token string, opts ...GiteaOption) (*Gitea, error) {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	redact.Register(token)
	var o giteaOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	hc := o.hc
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if o.caFile != "" {
			pool, err := capool.Load(o.caFile)
			if err != nil {
				return nil, err
			}
			t.TLSClientConfig = capool.TLS(pool)
		}
		t.ResponseHeaderTimeout = ResponseTimeout
		hc = &http.Client{Transport: t, Timeout: 60 * time.Second}
	} else if o.caFile != "" {
		return nil, errors.New("gitea client: WithCAFile and WithHTTPClient exclude each other; put the CA in the client's transport")
	}
	hc = withToken(hc, u, token)
	hc.Transport = peermetrics.Forge(hc.Transport)
	return &Gitea{url: strings.TrimSuffix(u.String(), "/"), baseURL: u, hc: hc, auth: Auth{Token: token, CAFile: o.caFile}, source: o.source}, nil
}

// client returns an SDK client for one call, bound to ctx.
//
// The SDK keeps the request context in the client (SetContext mutates
// shared state), so a client shared across goroutines would race on it.
// A client is cheap when it need not ask the server's version, so each call
// gets its own, sharing the http.Client; the version is probed once.
func (g *Gitea) client(ctx context.Context) (*sdk.Client, *sdk.Response, error) {
	version, resp, err := g.serverVersion(ctx)
	if err != nil {
		return nil, resp, err
	}
	c, err := sdk.NewClient(g.url, g.base(ctx, version)...)
	return c, nil, err
}

func (g *Gitea) base(ctx context.Context, version string) []sdk.ClientOption {
	return []sdk.ClientOption{
		sdk.SetHTTPClient(g.hc),
		sdk.SetContext(ctx),
		sdk.SetUserAgent("pinbot"),
		sdk.SetGiteaVersion(version), // "" skips the SDK's version checks
	}
}

// serverVersion returns the server's version, asking it once. A failed
// probe is not remembered, so a server that was down is asked again.
func (g *Gitea) serverVersion(ctx context.Context) (string, *sdk.Response, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.version != "" {
		return g.version, nil, nil
	}
	c, err := sdk.NewClient(g.url, g.base(ctx, "")...)
	if err != nil {
		return "", nil, err
	}
	v, resp, err := c.ServerVersion()
	if err != nil {
		return "", resp, err
	}
	if _, err := sdk.NewClient(g.url, sdk.SetGiteaVersion(v)); err != nil {
		v = "" // unparsable (a dev build): skip the SDK's version checks
	}
	g.version = v
	return v, nil, nil
}

// call runs fn with a fresh client and turns a failure into an *APIError
// naming op.
func (g *Gitea) call(ctx context.Context, op string, fn func(c *sdk.Client) (*sdk.Response, error)) error {
	c, resp, err := g.client(ctx)
	if err == nil {
		resp, err = fn(c)
	}
	if err == nil {
		return nil
	}
	e := &APIError{Op: op, Err: err, TokenSource: g.source}
	if resp != nil && resp.Response != nil {
		e.StatusCode = resp.StatusCode
	}
	return e
}

// pages calls fetch for page 1, 2, ... until the server says there is no
// next page.
func pages(fetch func(opt sdk.ListOptions) (*sdk.Response, error)) (*sdk.Response, error) {
	for page := 1; ; {
		resp, err := fetch(sdk.ListOptions{Page: page, PageSize: 50})
		if err != nil || resp == nil || resp.NextPage <= page {
			return resp, err
		}
		page = resp.NextPage
	}
}

// DefaultBranch returns the default branch of repo.
func (g *Gitea) DefaultBranch(ctx context.Context, repo Repo) (string, error) {
	var branch string
	err := g.call(ctx, "reading repository "+repo.String(), func(c *sdk.Client) (*sdk.Response, error) {
		r, resp, err := c.GetRepo(repo.Owner, repo.Name)
		if err == nil {
			branch = r.DefaultBranch
		}
		return resp, err
	})
	return branch, err
}
