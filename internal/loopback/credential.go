package loopback

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CheckURL checks raw, the URL a credential is sent to: http or https
// with a host, no credentials of its own, and plain HTTP only to loopback
// unless insecure allows it. Its errors never quote the URL's userinfo.
func CheckURL(raw string, insecure bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, errors.New("want http(s)://host[:port][/path]")
	case u.User != nil:
		return nil, errors.New("put no credentials in the URL")
	case Cleartext(u) && !insecure:
		return nil, fmt.Errorf("plain HTTP to %s, which is not loopback, would send the token in clear", u.Host)
	}
	return u, nil
}

// Client returns an HTTP client for requests that carry a credential: it
// follows at most 5 redirects, refuses one to cleartext, and drops the
// Authorization header on any redirect that leaves the first request's
// origin (scheme, host and port). Go's own client forwards it to another
// port of the same host.
func Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: checkRedirect}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	first := via[0].URL
	if Cleartext(req.URL) && !Cleartext(first) {
		return fmt.Errorf("refusing a redirect to plain HTTP at %s", req.URL.Host)
	}
	if !sameOrigin(first, req.URL) {
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	return nil
}

// sameOrigin reports whether a and b share scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
