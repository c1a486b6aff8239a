package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler"
)

// webhookSecretEnv holds the webhook secret when --webhook-secret-file is
// not given.
const webhookSecretEnv = "PINBOT_WEBHOOK_SECRET"

// serveFlags are reconcile's HTTP endpoint flags.
type serveFlags struct {
	listen     string
	secretFile string
}

func (f *serveFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.listen, "listen", "",
		`serve /webhook/gitea, /metrics and /healthz on this address, e.g. ":8080" (default: no HTTP endpoint)`)
	cmd.Flags().StringVar(&f.secretFile, "webhook-secret-file", "",
		"file holding the Gitea webhook secret, required with --listen (default $"+webhookSecretEnv+")")
}

// secret validates the flags and returns the webhook secret, nil when
// --listen is off. Without a secret the webhook would trigger on anyone's
// request, so it is a usage error.
func (f *serveFlags) secret() ([]byte, error) {
	if f.listen == "" {
		return nil, nil
	}
	var secret []byte
	if f.secretFile != "" {
		b, err := os.ReadFile(f.secretFile)
		if err != nil {
			return nil, usageErrorf("flag --webhook-secret-file: %w", err)
		}
		secret = bytes.TrimSpace(b)
		if len(secret) == 0 {
			return nil, usageErrorf("flag --webhook-secret-file: %s is empty", f.secretFile)
		}
	} else {
		secret = bytes.TrimSpace([]byte(os.Getenv(webhookSecretEnv)))
	}
	if len(secret) == 0 {
		return nil, usageErrorf("flag --webhook-secret-file (or $%s): required with --listen", webhookSecretEnv)
	}
	redact.Register(string(secret))
	return secret, nil
}

// reconcilerMux routes the reconciler's HTTP endpoints; d adds serve's.
func reconcilerMux(r *reconciler.Reconciler, secret []byte, d *daemon) http.Handler {
	mux := http.NewServeMux()
	var webhook http.Handler = r.WebhookHandler(secret, webhookOptions(r.Config())...)
	if d != nil {
		webhook = d.webhook(r, secret)
		mux.Handle("/", dashboard.Handler(dashboardSource{r}, dashboard.DefaultRefresh))
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if !d.ready.Load() || d.draining.Load() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	mux.Handle("/webhook/gitea", webhook)
	mux.Handle("GET /metrics", r.Metrics())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// serve serves h on ln until ctx ends, then shuts down, giving open
// requests a few seconds. It returns an error only if serving fails.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// Requests carry ctx's values (the logger), not its end: the
		// shutdown below ends them.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down the server on %s: %w", ln.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	}
	return nil
}
