package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

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
	Err        error
}

// Error implements error.
func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %q", e.Op, e.Reference)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(": registry %s answered HTTP %d %s", e.Registry, e.StatusCode, http.StatusText(e.StatusCode))
	}
	return redact.String(msg + ": " + e.Err.Error())
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes a 404 answer match ErrNotFound.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound
}

// fail wraps err into an *Error for op on ref at registry.
func fail(op, ref, registry string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	out := &Error{Op: op, Reference: redact.String(ref), Registry: registry, Err: err}
	var te *transport.Error
	if errors.As(err, &te) {
		out.StatusCode = te.StatusCode
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
