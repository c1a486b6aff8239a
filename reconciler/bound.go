package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// APIResponseTimeout bounds how long one request to the Kubernetes API
// waits for the server to start answering. An API server that accepts the
// connection and never answers fails the request after it (a transient
// fault, retried with backoff) instead of hanging the app's pass. Watches
// are not cut: their headers come at once, and the stream may then stay
// quiet for as long as nothing changes.
//
// It stays under client-go's HTTP/2 health check (a ping after 30s of
// silence, the connection dropped 15s later): client-go retries a GET
// whose connection was dropped up to ten times, so without this bound a
// stalled server held each GET for eight minutes.
const APIResponseTimeout = 40 * time.Second

// errNoAnswer is the cause of a request cut off by headerTimeout.
var errNoAnswer = errors.New("the server accepted the request and did not answer")

// headerTimeout is a RoundTripper that cancels a request whose response
// headers do not arrive within d. client-go builds its own transports, so
// this wraps them (rest.Config.WrapTransport) rather than setting
// http.Transport.ResponseHeaderTimeout; rest.Config.Timeout would also cut
// watches.
type headerTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

// boundResponses returns a rest.Config.WrapTransport that applies
// headerTimeout with d, after the wrapper already set (if any).
func boundResponses(prev func(http.RoundTripper) http.RoundTripper, d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return &headerTimeout{rt: rt, d: d}
	}
}

// RoundTrip sends req, giving up when no response headers came within d.
func (h *headerTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(h.d, func() { cancel(errNoAnswer) })
	resp, err := h.rt.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, fmt.Errorf("%s %s: no answer after %s: %w", req.Method, req.URL.Redacted(), h.d, context.DeadlineExceeded)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases the request's context once the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel(nil)
	return err
}
