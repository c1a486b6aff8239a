// Package faultproxy is a TCP proxy for tests that stands in front of a real
// peer (Gitea, a kube-apiserver) and misbehaves on demand: it passes bytes
// through, answers every HTTP request with 503, or stalls: accepts the
// connection, reads what the client sends and never answers.
//
// Start works below TLS, so it fronts HTTPS peers as they are: a client
// that trusts the peer's certificate for 127.0.0.1 trusts the proxy too;
// but stalling there stalls the TLS handshake, which clients bound on their
// own. StartTLS terminates TLS with the peer's own certificate, so Stall
// stalls after the handshake, where only a bound on the answer helps. Fail
// speaks HTTP/1.1 and suits plain HTTP peers (and TLS clients without
// HTTP/2).
//
// Changing the mode closes every open connection, so clients that keep
// connections alive reconnect and meet the new mode.
package faultproxy

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Mode is how the proxy treats connections.
type Mode int

// The modes of a Proxy.
const (
	// Pass copies bytes both ways between the client and the peer.
	Pass Mode = iota
	// Fail answers each connection's first request with
	// "HTTP/1.1 503 Service Unavailable" and closes it.
	Fail
	// Stall accepts the connection, reads and discards what the client
	// sends, and never writes a byte.
	Stall
	// Refuse closes each connection at once: a peer that went away.
	Refuse
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Stall:
		return "stall"
	case Refuse:
		return "refuse"
	}
	return "mode(?)"
}

// Proxy is a running fault proxy on 127.0.0.1.
type Proxy struct {
	target string
	ln     net.Listener
	tls    *tls.Config // nil: pass bytes below TLS

	mu    sync.Mutex
	mode  Mode
	conns map[net.Conn]struct{}

	accepted atomic.Int64
	wg       sync.WaitGroup
}

// Start starts a proxy to target (host:port) in mode and stops it when the
// test ends.
func Start(tb testing.TB, target string, mode Mode) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: listening: %s", err)
	}
	p := &Proxy{target: target, ln: ln, mode: mode, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(p.Close)
	return p
}

// StartTLS is Start for a TLS peer, terminating TLS at the proxy with the
// certificate and key in certFile and keyFile (the peer's own serving
// pair, so clients trust the proxy as they trust the peer). Pass opens a
// new TLS connection to the peer with the protocol the client negotiated
// (h2 or http/1.1), not verifying the peer: it is test support on
// loopback.
func StartTLS(tb testing.TB, target string, mode Mode, certFile, keyFile string) *Proxy {
	tb.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		tb.Fatalf("faultproxy: loading the serving pair: %s", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: listening: %s", err)
	}
	p := &Proxy{target: target, ln: ln, tls: conf, mode: mode, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted is how many connections the proxy accepted so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// SetMode switches the mode for new connections and closes the open ones.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.SetMode(Stall)
	p.wg.Wait()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		mode := p.mode
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.forget(c)
			p.handle(c, mode)
		}()
	}
}

func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) handle(c net.Conn, mode Mode) {
	if mode == Refuse {
		return // forget closes it
	}
	proto := ""
	if p.tls != nil {
		tc := tls.Server(c, p.tls)
		if err := tc.Handshake(); err != nil {
			return
		}
		proto = tc.ConnectionState().NegotiatedProtocol
		c = tc
	}
	switch mode {
	case Stall:
		io.Copy(io.Discard, c) // until the client or SetMode closes it
	case Fail:
		buf := make([]byte, 4096)
		c.Read(buf) // the start of the request; the answer does not depend on it
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 22\r\nConnection: close\r\n\r\nfaultproxy: failing.\r\n")
	default:
		up, err := p.dial(proto)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		defer p.forget(up)
		done := make(chan error, 2)
		pipe := func(dst, src net.Conn) {
			_, err := io.Copy(dst, src)
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
				cw.CloseWrite() // pass the half-close on
			}
			done <- err
		}
		go pipe(up, c)
		go pipe(c, up)
		if err := <-done; err != nil {
			c.Close()
			up.Close()
		}
		<-done
	}
}

// dial connects to the peer: plain TCP, or TLS speaking proto.
func (p *Proxy) dial(proto string) (net.Conn, error) {
	if p.tls == nil {
		return net.Dial("tcp", p.target)
	}
	conf := &tls.Config{InsecureSkipVerify: true} // loopback test peer; see StartTLS
	if proto != "" {
		conf.NextProtos = []string{proto}
	}
	return tls.Dial("tcp", p.target, conf)
}
