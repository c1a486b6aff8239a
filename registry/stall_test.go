package registry

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
)

// stalledListener accepts connections on loopback and never reads from or
// writes to them, as a hung registry or proxy does.
func stalledListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestStalledRegistry checks that every call to a registry that accepts
// the connection and never answers ends, within its bound, with an *Error
// naming the registry host: by the stall timeout (TLS handshake, response
// headers) or, when that is longer, by the per-call timeout.
func TestStalledRegistry(t *testing.T) {
	isolateDockerConfig(t, "")
	host := stalledListener(t)
	ref := host + "/team/app:v1"
	amd64 := imageref.Platform{OS: "linux", Architecture: "amd64"}
	calls := map[string]func(c *Client) error{
		"Resolve":  func(c *Client) error { _, err := c.Resolve(t.Context(), ref); return err },
		"Describe": func(c *Client) error { _, err := c.Describe(t.Context(), ref); return err },
		"ChildFor": func(c *Client) error { _, err := c.ChildFor(t.Context(), ref, amd64); return err },
		"Candidates": func(c *Client) error {
			_, err := c.Candidates(t.Context(), ref, amd64, true)
			return err
		},
	}
	for _, tc := range []struct {
		name  string
		opts  []Option
		bound time.Duration // generous: CI is loaded
	}{
		{name: "stall timeout", opts: []Option{WithStallTimeout(300 * time.Millisecond), WithCallTimeout(time.Hour)}, bound: 20 * time.Second},
		{name: "call timeout", opts: []Option{WithStallTimeout(time.Hour), WithCallTimeout(time.Second)}, bound: 20 * time.Second},
	} {
		for op, call := range calls {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				t.Parallel()
				c := newClient(t, tc.opts...)
				began := time.Now()
				err := call(c)
				elapsed := time.Since(began)
				if elapsed > tc.bound {
					t.Errorf("%s took %v, want at most %v", op, elapsed, tc.bound)
				}
				var e *Error
				if !errors.As(err, &e) || e.Registry != host {
					t.Fatalf("%s = %v, want an *Error for registry %s", op, err, host)
				}
				if want := "registry " + host + " did not answer in time"; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			})
		}
	}
}
