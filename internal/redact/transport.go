package redact

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// Credentials wraps rt so that the credential of every request's
// Authorization header is registered before the request is sent: a
// bearer token, a basic auth pair and its password. Wrapped inside a
// client's auth (client-go's WrapTransport), it sees tokens that only
// exist at run time, such as an exec plugin's, so a peer that echoes
// them back cannot put them in a log or error.
func Credentials(rt http.RoundTripper) http.RoundTripper {
	return credentials{rt}
}

type credentials struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (c credentials) RoundTrip(req *http.Request) (*http.Response, error) {
	registerAuthorization(req.Header.Get("Authorization"))
	return c.base.RoundTrip(req)
}

// registerAuthorization registers the credentials an Authorization header
// value carries.
func registerAuthorization(v string) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		Register(v)
		return
	}
	cred = strings.TrimSpace(cred)
	Register(cred)
	if strings.EqualFold(scheme, "basic") {
		if raw, err := base64.StdEncoding.DecodeString(cred); err == nil {
			if _, pass, ok := strings.Cut(string(raw), ":"); ok {
				Register(pass)
			}
		}
	}
}
