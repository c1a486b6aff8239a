// Package pprofserve serves Go's runtime profiles on an address of their
// own, for serve's --pprof-listen.
package pprofserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
)

// Serve serves Go's runtime profiles (/debug/pprof/) on addr until
// ctx ends, for an operator who asks with --pprof-listen why a replica
// holds the memory it holds. They are on an address of their own, never
// --listen's, so that they are not exposed with the dashboard. An address
// without a host (":6060") listens on loopback only: the profiles hold
// the process's memory, and whoever reaches them could read it. Its only
// error is an address it cannot listen on.
func Serve(ctx context.Context, addr string) error {
	addr = pprofAddr(addr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("flag --pprof-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logctx.From(ctx).Warn("the profiles' endpoint stopped", "listen", addr, "error", err)
		}
	}()
	return nil
}

// pprofAddr is addr with an empty host made loopback's.
func pprofAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}
