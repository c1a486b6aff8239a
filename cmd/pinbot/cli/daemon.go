package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler"
)

// daemon is the one code path of `pinbot reconcile` and `pinbot serve`:
// the reconcile loops of every app and, with listen set, the HTTP
// endpoints; with leader election, the loops run only while this replica
// leads. reconcile is a daemon without leader election and without the
// dashboard.
type daemon struct {
	listen          string
	secret          []byte
	dashboard       bool // serve /, /readyz and the trigger forwarding
	elect           bool
	lease           leaseOptions
	shutdownTimeout time.Duration
	drift           []driftJob // the config's promote: entries with a schedule

	ready    atomic.Bool // /readyz: checks passed and, electing, the elector runs
	leading  atomic.Bool
	draining atomic.Bool // SIGTERM: webhooks answer 503
	kube     kubernetes.Interface
	ns       string
}

// webhook is the Gitea webhook handler: 503 while draining; on a
// follower, a matched app is forwarded to the leader through the trigger
// ConfigMap.
func (d *daemon) webhook(r *reconciler.Reconciler, secret []byte) http.Handler {
	// A package event promotes on whichever replica Gitea reached: a
	// promotion is idempotent and a push on a moved base is rejected, so a
	// follower's promotion is safe, and Gitea delivers each event once.
	opts := append(webhookOptions(r.Config()), reconciler.WebhookTrigger(func(ctx context.Context, app string) error {
		if !d.elect || d.leading.Load() {
			return r.Trigger(app)
		}
		return forwardTrigger(ctx, d.kube, d.ns, app)
	}))
	h := r.WebhookHandler(secret, opts...)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if d.draining.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// run runs the daemon until ctx ends (SIGTERM, SIGINT), then shuts down:
// webhooks answer 503, the loops get up to shutdownTimeout to stop, the
// Lease is released and the server closes. A missing state namespace stops
// it before anything else.
func (d *daemon) run(ctx context.Context, r *reconciler.Reconciler, kube kubernetes.Interface) error {
	log := logctx.From(ctx)
	d.kube, d.ns = kube, r.Config().StateNamespace
	if err := r.Check(ctx); errors.Is(err, reconciler.ErrNoStateNamespace) {
		return err
	}
	// The shutdown runs on a context of its own: ctx's end starts it.
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()

	served := make(chan error, 1)
	if d.listen != "" {
		ln, err := net.Listen("tcp", d.listen)
		if err != nil {
			return fmt.Errorf("flag --listen: %w", err)
		}
		var dd *daemon
		if d.dashboard {
			dd = d
		}
		log.Info("serving", "addr", ln.Addr().String())
		go func() { served <- serve(work, ln, reconcilerMux(r, d.secret, dd)) }()
	} else {
		served <- nil
	}

	// SIGTERM (ctx's end) stops the loops from starting passes; work,
	// ended after --shutdown-timeout, bounds the pass in flight.
	loopCtx := work
	stop := ctx.Done()
	loopDone := make(chan error, 1)
	lost := make(chan struct{})
	if !d.elect {
		d.leading.Store(true)
		d.ready.Store(true)
		go func() { loopDone <- d.loops(loopCtx, stop, r) }()
	} else {
		le, err := d.lease.elector(kube, d.ns, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				log.Info("leading", "lease", d.ns+"/"+leaseName, "id", d.lease.id)
				d.leading.Store(true)
				if err := watchTriggers(lctx, kube, d.ns, func(app string) { _ = r.Trigger(app) }); err != nil && lctx.Err() == nil {
					loopDone <- err
					return
				}
				loopDone <- d.loops(lctx, stop, r)
			},
			OnStoppedLeading: func() {
				if d.leading.Swap(false) && ctx.Err() == nil {
					close(lost)
				}
			},
			OnNewLeader: func(id string) { log.Info("leader", "id", id) },
		})
		if err != nil {
			return err
		}
		electDone := make(chan struct{})
		electCtx, stopElect := context.WithCancel(work)
		go func() { defer close(electDone); le.Run(electCtx) }()
		d.ready.Store(true)
		return d.wait(ctx, loopDone, lost, served, stopElect, electDone, stopWork)
	}
	return d.wait(ctx, loopDone, lost, served, func() {}, nil, stopWork)
}

// loops runs what only the leader does until ctx ends: the reconcile
// loops and the drift schedules.
// Closing stop ends the loops after the pass in flight (bounded by ctx).
func (d *daemon) loops(ctx context.Context, stop <-chan struct{}, r *reconciler.Reconciler) error {
	driftCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-driftCtx.Done():
		}
	}()
	drifted := make(chan error, 1)
	go func() { drifted <- runDrift(driftCtx, d.drift) }()
	err := r.RunUntil(ctx, stop)
	cancel() // the drift schedules stop with the loops
	return errors.Join(err, <-drifted)
}

// wait blocks until ctx ends, the loops fail, the lease is lost or the
// server fails, and then shuts down in order.
func (d *daemon) wait(ctx context.Context, loopDone <-chan error, lost <-chan struct{}, served <-chan error,
	stopElect func(), electDone <-chan struct{}, stopWork func()) error {
	log := logctx.From(ctx)
	var err error
	select {
	case <-ctx.Done():
		d.draining.Store(true)
		log.Info("shutting down", "timeout", d.shutdownTimeout)
		if d.leading.Load() {
			select {
			case err = <-loopDone:
			case <-time.After(d.shutdownTimeout):
				log.Warn("the loops did not stop within --shutdown-timeout")
			}
		}
	case err = <-loopDone:
		if err == nil && ctx.Err() == nil && d.elect {
			err = errors.New("the reconcile loops stopped")
		}
	case <-lost:
		err = errors.New("lost the leader lease " + d.ns + "/" + leaseName)
	case err = <-served:
		if err == nil {
			err = errors.New("the HTTP server stopped")
		}
	}
	stopElect() // releases the Lease (ReleaseOnCancel)
	if electDone != nil {
		<-electDone
	}
	stopWork()
	return errors.Join(err, <-served)
}

// hostname is --id's default.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "pinbot"
	}
	return h
}

// dashboardSource reads the dashboard's apps from the reconciler's history.
type dashboardSource struct{ r *reconciler.Reconciler }

// Apps implements dashboard.Source.
func (s dashboardSource) Apps(ctx context.Context) ([]dashboard.App, error) {
	var out []dashboard.App
	for _, a := range s.r.Config().Apps {
		app, err := s.App(ctx, a.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, app)
	}
	return out, nil
}

// App implements dashboard.Source.
func (s dashboardSource) App(ctx context.Context, name string) (dashboard.App, error) {
	a, err := s.r.Config().App(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	rec, err := s.r.History(ctx, name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("reading the history of %s: %w", name, err)
	}
	return dashboard.App{Name: name, Source: string(a.Deployer()), Status: rec.Status, Record: rec}, nil
}
