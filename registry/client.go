// Package registry reads images from OCI registries, on
// go-containerregistry: it resolves a reference to a digest (HEAD first, GET
// as a fallback), describes what a digest holds (platforms, created time,
// labels, annotations, size), picks the child of an index for a platform, and
// finds the config digest containerd reports as a bare imageID.
//
// Every fetched manifest is checked against its digest. Plain HTTP is used
// only on loopback and for registries listed with WithInsecure. Requests that
// meet 429 or 5xx are retried with backoff, honouring Retry-After, within the
// budget set by WithRetry; at most WithConcurrency requests are in flight per
// registry host. Errors are *Error values naming the reference and the
// registry's HTTP status code, with credentials redacted.
//
// A Client makes one handshake (ping and token) per registry host, not per
// repository, and keeps its connections alive, so resolving 100 tags of a
// registry costs about 102 requests; what Describe learns of a digest is
// kept, since a digest's content never changes. No call can hang on a
// registry that accepts the connection and never answers: connecting, the
// TLS handshake and the wait for response headers are each bounded
// (WithStallTimeout), and so is the whole call (WithCallTimeout).
package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/peermetrics"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/internal/retry"
)

// Defaults for the options of New.
const (
	DefaultConcurrency  = 8
	DefaultRetry        = 30 * time.Second
	DefaultStallTimeout = 30 * time.Second
	DefaultCallTimeout  = 2 * time.Minute
)

// userAgent is what pinbot calls itself to registries.
const userAgent = "pinbot"

// Client reads from registries. It is safe for concurrent use. It keeps one
// authenticated session per registry host (one ping, one token exchange,
// shared by every repository of that registry while the token serves), one
// keep-alive connection pool, and what Describe learnt about each digest.
// Credentials changed in the docker config are seen by a new Client.
type Client struct {
	rt          http.RoundTripper // user agent → verify → retry → host guard → base
	keychain    authn.Keychain
	creds       *credentials
	insecure    map[string]bool
	maxElapsed  time.Duration
	callTimeout time.Duration
	seen        *seenCredentials
	sessions    sessions
	described   *imageCache
}

type options struct {
	keychain    authn.Keychain
	basic       map[string]authn.AuthConfig
	forgeHost   string
	forgeAuth   authn.AuthConfig
	insecure    []string
	concurrency int
	maxElapsed  time.Duration
	stall       time.Duration
	call        time.Duration
	transport   http.RoundTripper
	caFile      string
}

// Option configures a Client.
type Option func(*options)

// WithKeychain sets where credentials come from. Default
// authn.DefaultKeychain: the docker config file ($DOCKER_CONFIG/config.json
// or ~/.docker/config.json: auths, and the docker-credential-* programs
// credHelpers and credsStore name). Credentials are resolved once per
// registry host: WithBasicAuth's first, then the keychain's, then
// WithForgeToken's.
func WithKeychain(kc authn.Keychain) Option {
	return func(o *options) { o.keychain = kc }
}

// WithBasicAuth sets a user and password for one registry host (such as
// "127.0.0.1:3000" or "docker.io"). They take precedence over the keychain
// for that host. The password is registered with redact, so it never shows in
// an error or log.
func WithBasicAuth(registryHost, user, pass string) Option {
	return func(o *options) {
		if o.basic == nil {
			o.basic = map[string]authn.AuthConfig{}
		}
		redact.Register(pass)
		o.basic[canonicalHost(registryHost)] = authn.AuthConfig{Username: user, Password: pass}
	}
}

// WithInsecure allows plain HTTP to the listed registry hosts ("host" allows
// every port, "host:port" one). Loopback hosts (localhost, 127.0.0.0/8, ::1)
// are always allowed plain HTTP; every other host must use HTTPS.
func WithInsecure(hosts ...string) Option {
	return func(o *options) { o.insecure = append(o.insecure, hosts...) }
}

// WithConcurrency limits the requests in flight to one registry host, from
// sending the request until its response body is closed. Default 8.
func WithConcurrency(n int) Option {
	return func(o *options) { o.concurrency = n }
}

// WithRetry bounds retrying within one call (Resolve, Describe, ChildFor,
// Candidates): requests answered 429 or 5xx are retried after the
// Retry-After the registry asks for, or else with exponential backoff, until
// the next wait would end more than maxElapsed after the call began; then
// the call fails with the last status. Default 30s. Zero disables retries.
func WithRetry(maxElapsed time.Duration) Option {
	return func(o *options) { o.maxElapsed = maxElapsed }
}

// WithStallTimeout bounds each phase of a request in which a stalled
// registry would otherwise hold pinbot forever: connecting, the TLS
// handshake, and waiting for the response headers. Default 30s. It applies
// to the default transport; one set with WithTransport keeps its own.
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) { o.stall = d }
}

// WithCallTimeout bounds one whole call (Resolve, Describe, ChildFor,
// Candidates), every request and retry in it, handshake included. Default
// 2m.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) { o.call = d }
}

// WithTransport sets the base HTTP transport (proxies, TLS roots). Default a
// clone of go-containerregistry's remote.DefaultTransport, keeping as many
// idle connections per host as WithConcurrency allows requests, with the
// timeouts of WithStallTimeout. The Client wraps it with its plain-HTTP
// guard, concurrency limit, retries and manifest verification.
func WithTransport(rt http.RoundTripper) Option {
	return func(o *options) { o.transport = rt }
}

// WithCAFile trusts the PEM certificates in path, besides the system
// roots, for registries behind a private CA (Gitea's own registry, often
// behind the forge's); "" adds none. It goes with the default transport
// only.
func WithCAFile(path string) Option {
	return func(o *options) { o.caFile = path }
}

// New returns a Client, or an error naming the option that is invalid.
func New(opts ...Option) (*Client, error) {
	o := options{
		keychain:    authn.DefaultKeychain,
		concurrency: DefaultConcurrency,
		maxElapsed:  DefaultRetry,
		stall:       DefaultStallTimeout,
		call:        DefaultCallTimeout,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("configuring the registry client: %w", err)
	}
	if o.transport == nil {
		t := defaultTransport(o.concurrency, o.stall)
		if o.caFile != "" {
			pool, err := capool.Load(o.caFile)
			if err != nil {
				return nil, fmt.Errorf("configuring the registry client: WithCAFile: %w", err)
			}
			if ht, ok := t.(*http.Transport); ok {
				ht.TLSClientConfig = capool.TLS(pool)
			}
		}
		o.transport = t
	}
	creds := newCredentials(o)
	c := &Client{
		keychain:    redactingKeychain{creds},
		creds:       creds,
		insecure:    map[string]bool{},
		maxElapsed:  o.maxElapsed,
		callTimeout: o.call,
		seen:        &seenCredentials{},
		sessions:    sessions{byHost: map[string]*session{}},
		described:   newImageCache(describeCacheSize),
	}
	for _, h := range o.insecure {
		c.insecure[canonicalHost(h)] = true
	}
	var rt http.RoundTripper = newHostTransport(peermetrics.Registry(o.transport), c.plainHTTPAllowed, o.concurrency, c.seen)
	rt = retry.New(rt, o.maxElapsed)
	rt = &verifyTransport{base: rt}
	c.rt = transport.NewUserAgent(rt, userAgent)
	return c, nil
}

// validate checks the options New was given.
func (o *options) validate() error {
	var errs []error
	if o.concurrency < 1 {
		errs = append(errs, fmt.Errorf("WithConcurrency(%d): want at least 1", o.concurrency))
	}
	if o.maxElapsed < 0 {
		errs = append(errs, fmt.Errorf("WithRetry(%v): want zero or more", o.maxElapsed))
	}
	if o.stall <= 0 {
		errs = append(errs, fmt.Errorf("WithStallTimeout(%v): want more than zero", o.stall))
	}
	if o.call <= 0 {
		errs = append(errs, fmt.Errorf("WithCallTimeout(%v): want more than zero", o.call))
	}
	if o.keychain == nil {
		errs = append(errs, errors.New("WithKeychain(nil): want a keychain"))
	}
	if o.caFile != "" && o.transport != nil {
		errs = append(errs, errors.New("WithCAFile and WithTransport exclude each other: put the CA in the transport"))
	}
	if _, ok := o.basic[""]; ok {
		errs = append(errs, errors.New("WithBasicAuth: empty registry host"))
	}
	for _, h := range o.insecure {
		if _, err := name.NewRegistry(canonicalHost(h)); err != nil || canonicalHost(h) == "" || strings.ContainsAny(h, "/@") {
			errs = append(errs, fmt.Errorf("WithInsecure(%q): want a host or host:port", h))
		}
	}
	return errors.Join(errs...)
}

// defaultTransport is a clone of go-containerregistry's default transport,
// with its own keep-alive pool sized for limit requests per host, and every
// phase a stalled peer could hold bounded by stall.
func defaultTransport(limit int, stall time.Duration) http.RoundTripper {
	t, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		return remote.DefaultTransport
	}
	t = t.Clone()
	t.DialContext = (&net.Dialer{Timeout: stall, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = stall
	t.ResponseHeaderTimeout = stall
	t.MaxIdleConnsPerHost = max(limit, t.MaxIdleConnsPerHost)
	return t
}

// call starts one public call: the retry budget and the overall timeout.
func (c *Client) call(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = retry.WithBudget(ctx, c.maxElapsed)
	return context.WithTimeout(ctx, c.callTimeout)
}

// parse parses ref, marking its registry insecure (plain HTTP allowed) only
// when it is loopback or listed with WithInsecure.
func (c *Client) parse(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, clip.Error(err)
	}
	if c.plainHTTPAllowed(r.Context().RegistryStr()) {
		return name.ParseReference(ref, name.Insecure)
	}
	return r, nil
}

// plainHTTPAllowed reports whether host ("host" or "host:port") may be
// spoken to over plain HTTP.
func (c *Client) plainHTTPAllowed(host string) bool {
	host = canonicalHost(host)
	hostname := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostname = h
	}
	hostname = strings.TrimSuffix(strings.TrimPrefix(hostname, "["), "]")
	if c.insecure[host] || c.insecure[hostname] {
		return true
	}
	return loopback.Host(hostname)
}

// canonicalHost lower-cases a registry host and maps docker.io to the name
// go-containerregistry uses, index.docker.io.
func canonicalHost(host string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "/"))
	if host == name.DefaultRegistry || host == "docker.io" {
		return name.DefaultRegistry
	}
	return host
}

// explicitKeychain serves WithBasicAuth credentials by registry host.
type explicitKeychain map[string]authn.AuthConfig

// PushOptions are go-containerregistry's remote options to write to
// registries as this Client reads them: its credentials (the same
// chain), its transport (retries, bounds, CA, redaction) and ctx.
func (c *Client) PushOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(c.keychain), remote.WithTransport(c.rt)}
}

// Resolve implements authn.Keychain.
func (k explicitKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	if cfg, ok := k[canonicalHost(target.RegistryStr())]; ok {
		return authn.FromConfig(cfg), nil
	}
	return authn.Anonymous, nil
}

// redactingKeychain registers every secret its keychain hands out with
// redact, so a registry that echoes credentials cannot leak them into an
// error.
type redactingKeychain struct{ inner authn.Keychain }

// Resolve implements authn.Keychain.
func (k redactingKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), target)
}

// ResolveContext implements authn.ContextKeychain.
func (k redactingKeychain) ResolveContext(ctx context.Context, target authn.Resource) (authn.Authenticator, error) {
	a, err := authn.Resolve(ctx, k.inner, target)
	if err != nil {
		return nil, fmt.Errorf("reading credentials for %s: %w", target.RegistryStr(), err)
	}
	if a == authn.Anonymous {
		return a, nil
	}
	return redactingAuth{inner: a}, nil
}

type redactingAuth struct{ inner authn.Authenticator }

// Authorization implements authn.Authenticator.
func (a redactingAuth) Authorization() (*authn.AuthConfig, error) {
	return a.AuthorizationContext(context.Background())
}

// AuthorizationContext implements authn.ContextAuthenticator.
func (a redactingAuth) AuthorizationContext(ctx context.Context) (*authn.AuthConfig, error) {
	cfg, err := authn.Authorization(ctx, a.inner)
	if err != nil {
		return nil, err
	}
	for _, s := range []string{cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken} {
		redact.Register(s)
	}
	return cfg, nil
}
