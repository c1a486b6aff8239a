// Package httpbound is pinbot's one home for the bound on a peer that
// accepts a request and never answers: every HTTP client pinbot makes
// (the Kubernetes API, Gitea's API and Git, the registry) waits a bounded
// time for response headers, while a body that streams, such as a watch or
// a clone, takes as long as it needs.
package httpbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// errNoAnswer is the cause of a request cut off by headerTimeout.
var errNoAnswer = errors.New("the server accepted the request and did not answer")

// headerTimeout is a RoundTripper that cancels a request whose response
// headers do not arrive within d. It wraps any transport, so it serves
// clients that build their own (client-go's, through
// rest.Config.WrapTransport; rest.Config.Timeout would also cut watches).
type headerTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

// Wrap returns rt bounded: a request whose response headers do not come
// within d fails with an error wrapping context.DeadlineExceeded.
func Wrap(rt http.RoundTripper, d time.Duration) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &headerTimeout{rt: rt, d: d}
}

// Transport is a clone of http.DefaultTransport whose dial, TLS handshake
// and response headers each wait at most d, for clients that take an
// *http.Transport.
func Transport(d time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = d
	t.ResponseHeaderTimeout = d
	return t
}

// WrapAfter returns a rest.Config.WrapTransport that bounds the transport
// as Wrap does, after the wrapper already set (prev, if any).
func WrapAfter(prev func(http.RoundTripper) http.RoundTripper, d time.Duration) func(http.RoundTripper) http.RoundTripper {
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
