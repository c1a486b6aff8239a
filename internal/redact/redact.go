// Package redact removes secrets from text before it reaches a log, an
// error, a pull request body or a status.
package redact

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

var (
	mu      sync.RWMutex
	secrets []string
)

// userinfo matches the user:password@ part of a URL inside free text.
var userinfo = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/@\s:]+(:[^/@\s]*)?@`)

// bearer matches tokens carried in common header and query forms.
var bearer = regexp.MustCompile(`(?i)((?:bearer|token|basic)\s+|(?:access_token|token|password)=)[A-Za-z0-9._~+/=-]{6,}`)

// Register adds a literal secret (a token or password) that String must
// remove wherever it appears. Empty and very short values are ignored: they
// would redact ordinary words.
func Register(secret string) {
	if len(secret) < 4 {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range secrets {
		if s == secret {
			return
		}
	}
	secrets = append(secrets, secret)
}

// String returns s with registered secrets, URL credentials and bearer
// tokens replaced by "REDACTED".
func String(s string) string {
	mu.RLock()
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, "REDACTED")
	}
	mu.RUnlock()
	s = userinfo.ReplaceAllString(s, "${1}REDACTED@")
	return bearer.ReplaceAllString(s, "${1}REDACTED")
}

// URL returns u as a string with any user information removed.
func URL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil || parsed.User == nil {
		return String(u)
	}
	parsed.User = nil
	return parsed.String()
}

// Error wraps err so that its message is redacted; errors.Is and errors.As
// still see the original chain.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{err: err}
}

type redacted struct{ err error }

func (r *redacted) Error() string { return String(r.err.Error()) }
func (r *redacted) Unwrap() error { return r.err }
