package gitforge

import (
	"net/http"
	"net/url"
	"strings"
)

// origin is what a credential is issued for: scheme, host and port.
type origin struct{ scheme, host, port string }

func originOf(u *url.URL) origin {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return origin{scheme: scheme, host: strings.ToLower(u.Hostname()), port: port}
}

// tokenTransport sends the Gitea token with the requests to the forge's
// own origin, and with no other request.
//
// The Gitea SDK would set the Authorization header on its request itself,
// and net/http's Client copies that header onto every redirect to the same
// host name (or a subdomain) whatever the port and scheme: a redirect to
// another port of the forge's host, another service, would receive the
// token. Set here, per request, the header reaches only the origin the
// token was given for, wherever redirects lead. (go-git strips credentials
// on a redirect that leaves the origin by itself.)
type tokenTransport struct {
	base   http.RoundTripper
	origin origin
	header string // "token " + the token; "" sends none
}

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	mine := t.header != "" && originOf(req.URL) == t.origin
	if mine || req.Header.Get("Authorization") != "" {
		req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
		req.Header.Del("Authorization")
		if mine {
			req.Header.Set("Authorization", t.header)
		}
	}
	return t.base.RoundTrip(req)
}

// withToken returns a copy of hc whose transport adds token for the
// origin of base only.
func withToken(hc *http.Client, base *url.URL, token string) *http.Client {
	c := *hc
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	t := &tokenTransport{base: rt, origin: originOf(base)}
	if token != "" {
		t.header = "token " + token
	}
	c.Transport = t
	return &c
}
