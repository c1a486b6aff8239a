package httpbound

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHeaderTimeout: a server that takes the request and does not answer
// fails it after the bound; one that answers in time is read whole, and a
// slow body after prompt headers is not cut.
func TestHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // a quiet stream after the headers, as a watch
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	defer close(release)
	c := &http.Client{Transport: Wrap(http.DefaultTransport, 200*time.Millisecond)}

	start := time.Now()
	_, err := c.Get(srv.URL + "/stall")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stalled request: err = %v, want a deadline error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("stalled request failed after %s, want about 200ms", took)
	}
	resp, err := c.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatalf("prompt request: %s", err)
	}
	var buf [8]byte
	n, _ := resp.Body.Read(buf[:])
	resp.Body.Close()
	if string(buf[:n]) != "ok" {
		t.Errorf("body = %q, want ok", buf[:n])
	}
}
