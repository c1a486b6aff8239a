package faultproxy

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// HTTP is a reverse proxy in front of a real HTTP peer that misbehaves on
// demand, request by request: Filter answers a request itself, After runs
// once the peer's answer to a request was written, and Refuse (SetMode)
// drops the connections that come, and the requests that come on the open
// ones, as a peer that went away does; Pass brings it back on the same
// address.
type HTTP struct {
	// Filter, when set, may answer a request instead of the peer: a
	// status other than 0 is written as the answer.
	Filter func(*http.Request) int
	// After, when set, runs after the peer answered a request.
	After func(*http.Request)

	ln  net.Listener
	srv *http.Server

	mu   sync.Mutex
	mode Mode
}

// StartHTTP starts an HTTP proxy to the peer at target (a URL) and stops
// it when the test ends.
func StartHTTP(tb testing.TB, target string) *HTTP {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("faultproxy: %s", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: listening: %s", err)
	}
	h := &HTTP{ln: ln}
	rp := httputil.NewSingleHostReverseProxy(u)
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.Mode() == Refuse {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		if h.Filter != nil {
			if code := h.Filter(r); code != 0 {
				http.Error(w, "faultproxy: "+http.StatusText(code), code)
				return
			}
		}
		rp.ServeHTTP(w, r)
		if h.After != nil {
			h.After(r)
		}
	}), ConnState: func(c net.Conn, st http.ConnState) {
		if st == http.StateNew && h.Mode() == Refuse {
			c.Close()
		}
	}}
	go h.srv.Serve(ln)
	tb.Cleanup(func() { h.srv.Close() })
	return h
}

// URL is the proxy's base URL.
func (h *HTTP) URL() string { return "http://" + h.ln.Addr().String() }

// Mode is the proxy's mode: Pass or Refuse.
func (h *HTTP) Mode() Mode {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mode
}

// SetMode switches between Pass and Refuse.
func (h *HTTP) SetMode(m Mode) {
	h.mu.Lock()
	h.mode = m
	h.mu.Unlock()
}
