package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/kubemetrics"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/peermetrics"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/serve/actions"
	"pinbot.dev/pinbot/serve/signin"
)

// registerMetrics gathers the reconciler's metrics and serve's own in
// d.metrics, which /metrics serves.
func (d *daemon) registerMetrics() error {
	if err := d.r.Register(d.metrics); err != nil {
		return err
	}
	leader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pinbot_leader",
		Help: "1 on the replica that writes (the leader, or a serve without leader election), 0 on a follower.",
	}, func() float64 {
		if d.leads() {
			return 1
		}
		return 0
	})
	cs := []prometheus.Collector{leader, d.shardsHeld(), d.refusals, d.promotions, d.requests, d.pushApps}
	cs = append(cs, d.release.Collectors()...)
	if a := d.attester; a != nil {
		cs = append(cs, a.Collector())
	}
	if d.notify != nil {
		cs = append(cs, d.notify.Collector())
	}
	if d.admission != nil {
		cs = append(cs, d.admission.Collector())
	}
	cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cs = append(append(cs, kubemetrics.Collectors()...), peermetrics.Collectors()...)
	for _, c := range append(cs, d.o.Collectors...) {
		if err := d.metrics.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// mux routes serve's HTTP endpoints: /metrics and /healthz, with webhook
// /webhook/gitea, and with the dashboard also / (its JSON API under /api)
// and /readyz.
func (d *daemon) mux(webhook bool) http.Handler {
	mux := http.NewServeMux()
	if d.o.Dashboard {
		guard := signin.Guard{Token: d.o.ReadToken, Header: d.o.AuthHeader, SignIn: d.signin}
		src := dashboardSource{r: d.r, rl: d.release, repos: d.repos}
		if d.signin != nil {
			d.signin.Routes(mux)
			src.acts = &actions.Handler{Ledgers: d.release.Ledgers(), Authz: actions.Authorizer{Client: d.kube}, SignIn: d.signin, Done: d.release.Wake, Now: time.Now}
			if d.promote != nil {
				src.acts.Force, src.acts.Merge = d.promote.force, d.promote.merge
			}
			src.acts.Routes(mux, guard)
		}
		mux.Handle("/", guard.Wrap(dashboard.Handler(src, dashboard.DefaultRefresh)))
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			switch {
			case d.draining.Load():
				http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
				return
			case !d.checked.Load():
				http.Error(w, "not ready: the state namespace was not found on the API server yet", http.StatusServiceUnavailable)
				return
			case !d.ready.Load():
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	if len(d.o.GateToken) > 0 {
		mux.Handle("GET "+proofapi.Path, proofapi.Handler(d.release.Answer(d.gateAnswer), d.o.GateToken))
	}
	if webhook {
		d.handleWebhook(mux)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// webhookMux serves /webhook/gitea alone, for --webhook-listen.
func (d *daemon) webhookMux() http.Handler {
	mux := http.NewServeMux()
	d.handleWebhook(mux)
	return mux
}

// handleWebhook routes /webhook/gitea on mux.
func (d *daemon) handleWebhook(mux *http.ServeMux) {
	hook := d.webhook()
	mux.Handle("/webhook/gitea", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if d.draining.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		hook.ServeHTTP(w, req)
	}))
}

// webhook is the Gitea webhook endpoint of d: a push triggers the apps
// following it (forwarded to the leader on a follower), a package event
// promotes on the leader (forwarded too).
func (d *daemon) webhook() *webhook {
	h := &webhook{
		secret:   d.o.Secret,
		follow:   d.r.Following,
		trigger:  d.triggerFollowing,
		merged:   d.r.Merged,
		targets:  d.cfg.Targets,
		requests: d.requests,
		seen:     newDeliveries(maxDeliveries),
	}
	if d.promote != nil {
		h.promote = d.promotePushed
	}
	return h
}

// serveHTTP serves h on ln until ctx ends, then shuts down, giving open
// requests a few seconds. It returns an error only if serving fails.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
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

// recheck checks the state namespace until the check passes or ctx ends,
// backing off up to a minute between tries.
func (d *daemon) recheck(ctx context.Context) {
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		err := d.r.Check(ctx)
		if err == nil {
			d.checked.Store(true)
			logctx.From(ctx).Info("the state namespace is there; ready")
			return
		}
		if errors.Is(err, record.ErrNoStateNamespace) {
			logctx.From(ctx).Error("the state namespace is missing: create it (deploy/namespace.yaml); not ready", "error", err.Error())
		}
	}
}
