package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/redact"
)

// Sentinels callers branch on with errors.Is.
var (
	// ErrNotFound: the registry answered 404 for the reference.
	ErrNotFound = errors.New("not found")
	// ErrDigestMismatch: a manifest's bytes do not hash to the digest it was
	// fetched by, or to the Docker-Content-Digest the registry announced.
	ErrDigestMismatch = errors.New("manifest does not match its digest")
	// ErrNotIndex: ChildFor was given a reference to a single manifest.
	ErrNotIndex = errors.New("not an image index")
	// ErrNoPlatform: an index has no child for the requested platform.
	ErrNoPlatform = errors.New("no manifest for the platform")
)

// Error is what every Client method returns on failure. It names the
// operation, the reference and, when the registry answered, its host and
// HTTP status code. Its message is redacted: credentials never show.
type Error struct {
	Op         string // "resolving", "describing", ...
	Reference  string // as the caller gave it
	Registry   string // registry host, e.g. "127.0.0.1:5000" or "index.docker.io"
	StatusCode int    // the registry's HTTP status; 0 when it never answered
	// Hint, on a 401 or 403, says where the credentials came from or
	// were looked for.
	Hint string
	Err  error
}

// Error implements error.
func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %s", e.Op, clip.QuoteRef(e.Reference))
	switch {
	case e.StatusCode != 0:
		msg += fmt.Sprintf(": registry %s answered HTTP %d %s", e.Registry, e.StatusCode, http.StatusText(e.StatusCode))
	case e.Registry != "" && isTimeout(e.Err):
		msg += fmt.Sprintf(": registry %s did not answer in time", e.Registry)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return redact.String(msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes a 404 answer match ErrNotFound.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound
}

// isTimeout reports whether err is a deadline: the call's, or one of the
// transport's stall timeouts (connect, TLS handshake, response headers).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fail wraps err into an *Error for op on ref at registry, scrubbing the
// credentials this Client's requests carried from its message.
func (c *Client) fail(op, ref, registry string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	out := &Error{Op: op, Reference: redact.String(ref), Registry: registry, Err: c.seen.scrubbing(err)}
	var te *transport.Error
	if errors.As(err, &te) {
		out.StatusCode = te.StatusCode
		out.Hint = c.creds.hint(registry, te.StatusCode)
	}
	return out
}

// headFallsBack reports whether a failed HEAD deserves a GET: not when the
// registry said the reference is missing or forbidden, or to slow down (a
// GET would count against the same limit), and not when the registry could
// not be reached at all.
func headFallsBack(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests:
			return false
		}
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// A HEAD answer without Docker-Content-Digest, Content-Type or
	// Content-Length, or with a digest other than the one asked for.
	return true
}

// seenCredentials remembers the most recent credentials the Client's
// requests carried (bearer tokens, basic auth blobs). redact catches them
// after "Bearer " or "Basic ", and registers passwords the keychain hands
// out; this catches a registry that echoes a token bare. Bounded, because
// bearer tokens are refreshed for as long as the process runs.
type seenCredentials struct {
	mu     sync.Mutex
	recent []string
}

const maxSeenCredentials = 32

// note records the credential in an Authorization header value.
func (s *seenCredentials) note(authorization string) {
	_, cred, ok := strings.Cut(authorization, " ")
	cred = strings.TrimSpace(cred)
	if !ok || len(cred) < 8 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.recent, cred) {
		return
	}
	s.recent = append(s.recent, cred)
	if len(s.recent) > maxSeenCredentials {
		s.recent = s.recent[1:]
	}
}

// scrubbing returns err with the remembered credentials replaced in its
// message; errors.Is and errors.As still see err.
func (s *seenCredentials) scrubbing(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &scrubbed{err: err, secrets: slices.Clone(s.recent)}
}

type scrubbed struct {
	err     error
	secrets []string
}

func (e *scrubbed) Error() string {
	msg := e.err.Error()
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, "REDACTED")
	}
	return redact.String(msg)
}

func (e *scrubbed) Unwrap() error { return e.err }
