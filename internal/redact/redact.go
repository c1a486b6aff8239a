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
// remove. A secret of any length counts; one shorter than shortSecret is
// removed only where it stands as a word of its own, so that a short
// password does not redact every word it is part of.
func Register(secret string) {
	if secret == "" {
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
		if len(secret) >= shortSecret {
			s = strings.ReplaceAll(s, secret, "REDACTED")
		} else {
			s = replaceWord(s, secret)
		}
	}
	mu.RUnlock()
	s = userinfo.ReplaceAllString(s, "${1}REDACTED@")
	return bearer.ReplaceAllString(s, "${1}REDACTED")
}

// shortSecret is the length below which a secret is redacted as a word
// only.
const shortSecret = 8

// replaceWord replaces each occurrence of secret in s that no letter or
// digit touches.
func replaceWord(s, secret string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, secret)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(secret)
		if (i == 0 || !isWordByte(s[i-1])) && (j == len(s) || !isWordByte(s[j])) {
			b.WriteString(s[:i])
			b.WriteString("REDACTED")
		} else {
			b.WriteString(s[:j])
		}
		s = s[j:]
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80
}

// URL returns u as a string with any user information removed. A URL that
// does not parse loses everything between "://" and its last "@": its
// credentials cannot be told apart, so none are printed.
func URL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		if i := strings.Index(u, "://"); i >= 0 {
			if at := strings.LastIndex(u[i+3:], "@"); at >= 0 {
				return u[:i+3] + "REDACTED@" + String(u[i+3+at+1:])
			}
		}
		return String(u)
	}
	if parsed.User == nil {
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
