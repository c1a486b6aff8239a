// Package retry retries idempotent HTTP requests that a server turned away
// for now (429 Too Many Requests, most 5xx, a dropped connection), honouring
// Retry-After, within a bounded time budget.
//
// go-containerregistry's own retry transport backs off on the same status
// codes but never reads Retry-After and does not stop waiting when the
// request's context ends, so pinbot wraps the base transport with this one
// and switches ggcr's retries off.
package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
)

// DefaultBackoff is the delay sequence used when the server gives no
// Retry-After: 250ms, 500ms, 1s, ... up to 8s between attempts, with 10%
// jitter.
var DefaultBackoff = transport.Backoff{
	Duration: 250 * time.Millisecond,
	Factor:   2,
	Jitter:   0.1,
	Steps:    10,
	Cap:      8 * time.Second,
}

// Transport is an http.RoundTripper that retries GET, HEAD and OPTIONS
// requests without a body when the answer is 429 or a 5xx other than 501 and
// 505, or when the connection dropped mid-way. It waits for the Retry-After
// the server asked for (seconds or an HTTP date) but at least the next step
// of its backoff. When the next wait would end past the budget, it hands back
// the last response as it is, so the caller sees the server's status code.
// Waits end early when the request's context does.
type Transport struct {
	base       http.RoundTripper
	maxElapsed time.Duration
	backoff    transport.Backoff
	sleep      func(context.Context, time.Duration) error
	now        func() time.Time
}

// Option configures a Transport.
type Option func(*Transport)

// WithBackoff sets the delay sequence used when a response carries no
// Retry-After. Default DefaultBackoff.
func WithBackoff(b transport.Backoff) Option {
	return func(t *Transport) { t.backoff = b }
}

// WithClock replaces the clock and the wait between attempts; tests use it to
// record the waits instead of spending them. sleep must return ctx.Err() when
// ctx ends first.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(t *Transport) { t.now, t.sleep = now, sleep }
}

// New returns a Transport over base that spends at most maxElapsed retrying
// one request, unless the request's context carries a budget set with
// WithBudget.
func New(base http.RoundTripper, maxElapsed time.Duration, opts ...Option) *Transport {
	t := &Transport{
		base:       base,
		maxElapsed: maxElapsed,
		backoff:    DefaultBackoff,
		sleep:      sleepCtx,
		now:        time.Now,
	}
	for _, opt := range opts {
		opt(t)
	}
	return t
}

type budgetKey struct{}

// WithBudget returns a context whose requests, together, stop retrying d from
// now. One budget then bounds a whole operation (resolving and describing an
// image takes several requests) rather than each request. An outer budget
// already in ctx is kept.
func WithBudget(ctx context.Context, d time.Duration) context.Context {
	if _, ok := ctx.Value(budgetKey{}).(time.Time); ok {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, time.Now().Add(d))
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !replayable(req) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	deadline, ok := ctx.Value(budgetKey{}).(time.Time)
	if !ok {
		deadline = t.now().Add(t.maxElapsed)
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	backoff := t.backoff
	for attempt := 1; ; attempt++ {
		resp, err := t.base.RoundTrip(req)
		wait, again := t.next(ctx, resp, err, &backoff)
		if !again || t.now().Add(wait).After(deadline) {
			return resp, err
		}
		log := logctx.From(ctx).With("method", req.Method, "url", redact.URL(req.URL.String()), "attempt", attempt, "wait", wait)
		if resp != nil {
			log.Debug("retrying request", "status", resp.StatusCode)
		} else {
			log.Debug("retrying request", "error", redact.String(err.Error()))
		}
		if resp != nil {
			// Drain a little so the connection can be reused.
			_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
			resp.Body.Close()
		}
		if err := t.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// next reports whether the outcome of one attempt deserves another, and how
// long to wait first.
func (t *Transport) next(ctx context.Context, resp *http.Response, err error, b *transport.Backoff) (time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	if err != nil {
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return b.Step(), true
		}
		return 0, false
	}
	if !Retryable(resp.StatusCode) {
		return 0, false
	}
	// Retry-After is the least the server asks for; the backoff keeps a
	// server that answers "Retry-After: 0" every time from being hammered.
	step := b.Step()
	if d, ok := RetryAfter(resp.Header, t.now()); ok {
		return max(d, step), true
	}
	return step, true
}

// Retryable reports whether a response status is worth another attempt:
// 429 and the 5xx codes except 501 Not Implemented and 505 HTTP Version Not
// Supported, which will not change by waiting.
func Retryable(status int) bool {
	switch {
	case status == http.StatusTooManyRequests:
		return true
	case status == http.StatusNotImplemented, status == http.StatusHTTPVersionNotSupported:
		return false
	default:
		return status >= 500 && status <= 599
	}
}

// RetryAfter parses the Retry-After header: delay-seconds or an HTTP date.
// A date in the past means no wait. It reports false when the header is
// absent or malformed.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		const most = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(secs, most)) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// replayable reports whether sending req again is safe: an idempotent read
// without a body.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	return req.Body == nil || req.Body == http.NoBody
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
