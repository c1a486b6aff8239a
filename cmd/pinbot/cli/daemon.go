package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
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

	cutMu sync.Mutex
	cut   context.CancelFunc // ends the loops' context: the pass in flight is cut off
}

// recordGrace is how long a pass cut off at --shutdown-timeout gets to
// record that it was interrupted, before the Lease is released.
const recordGrace = 10 * time.Second

// loopContext is ctx for the loops, which cutLoops ends.
func (d *daemon) loopContext(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	d.cutMu.Lock()
	d.cut = cancel
	d.cutMu.Unlock()
	return ctx
}

// cutLoops ends the loops' context (see loopContext).
func (d *daemon) cutLoops() {
	d.cutMu.Lock()
	defer d.cutMu.Unlock()
	if d.cut != nil {
		d.cut()
	}
}

// webhook is the Gitea webhook handler: 503 while draining; on a
// follower, a matched app is forwarded to the leader through the trigger
// ConfigMap.
func (d *daemon) webhook(r *reconciler.Reconciler, secret []byte) http.Handler {
	// Only the leader writes: a follower forwards a package event's
	// promotion to the leader as it forwards a push.
	opts := []reconciler.WebhookOption{reconciler.WebhookTrigger(func(ctx context.Context, app string) error {
		if !d.elect || d.leading.Load() {
			return r.Trigger(app)
		}
		return forwardTrigger(ctx, d.kube, d.ns, app)
	})}
	if p := newImagePromoter(r.Config()); p != nil {
		opts = append(opts, reconciler.WithPromoter(leaderPromoter{d: d, p: p}))
	}
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
	stop := ctx.Done()
	loopDone := make(chan error, 1)
	lost := make(chan struct{})
	if !d.elect {
		d.leading.Store(true)
		d.ready.Store(true)
		loopCtx := d.loopContext(work)
		go func() { loopDone <- d.loops(loopCtx, stop, r) }()
	} else {
		le, err := d.lease.elector(kube, d.ns, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				log.Info("leading", "lease", d.ns+"/"+leaseName, "id", d.lease.id)
				d.leading.Store(true)
				trigger := func(app string) { _ = r.Trigger(app) }
				promote := func(p promoteRequest) { go promoteForwarded(lctx, r.Config(), p) }
				if err := watchTriggers(lctx, kube, d.ns, trigger, promote); err != nil && lctx.Err() == nil {
					loopDone <- err
					return
				}
				loopDone <- d.loops(d.loopContext(lctx), stop, r)
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
				// Cut the pass off, and let it record that before the
				// Lease goes: the next leader's first pass applies a
				// commit whose sync is not recorded as Applied.
				log.Warn("the loops did not stop within --shutdown-timeout; interrupting the pass in flight")
				d.cutLoops()
				select {
				case <-loopDone:
				case <-time.After(recordGrace):
					log.Warn("the interrupted pass did not record within the grace period", "grace", recordGrace)
				}
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

// leaderPromoter promotes a package event's image on the leader (or
// without leader election) and forwards it to the leader on a follower.
type leaderPromoter struct {
	d *daemon
	p reconciler.ImagePromoter
}

// PromoteImage implements reconciler.ImagePromoter.
func (l leaderPromoter) PromoteImage(ctx context.Context, t reconciler.PromoteTarget, image, tag string) (string, error) {
	if !l.d.elect || l.d.leading.Load() {
		return l.p.PromoteImage(ctx, t, image, tag)
	}
	if err := forwardPromotion(ctx, l.d.kube, l.d.ns, t.Repo, image, tag); err != nil {
		return "", err
	}
	logctx.From(ctx).Info("forwarded a package event to the leader", "image", image, "tag", tag, "repo", t.Repo)
	return "forwarded to the leader", nil
}

// promoteForwarded promotes, on the leader, a package event a follower
// forwarded, into the promote entry it names (if the config still lists
// the image there), bounded by leadership and promoteTimeout.
func promoteForwarded(ctx context.Context, cfg *reconciler.Config, req promoteRequest) {
	log := logctx.From(ctx).With("image", req.Image, "tag", req.Tag, "repo", req.Repo, "forwarded", true)
	p := newImagePromoter(cfg)
	var target *reconciler.PromoteTarget
	for _, t := range reconciler.PromoteTargets(cfg.Promote, req.Image) {
		if t.Repo == req.Repo {
			target = &t
			break
		}
	}
	if p == nil || target == nil {
		log.Warn("ignoring a forwarded promotion: no promote entry lists the image for the repository")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, promoteTimeout)
	defer cancel()
	res, err := p.PromoteImage(ctx, *target, req.Image, req.Tag)
	if err != nil {
		log.Error("promoting a pushed image", "error", redact.String(err.Error()))
		return
	}
	log.Info("promoted a pushed image", "result", res)
}

// hostname is --id's default.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "pinbot"
	}
	return h
}

// dashboardSource reads the dashboard's apps from the reconciler: the
// last pass of this replica (status and per-container verification), the
// persisted history (every replica reads the leader's), and on an app's
// page the open promotion pull requests from the forge.
type dashboardSource struct{ r *reconciler.Reconciler }

// Apps implements dashboard.Source.
func (s dashboardSource) Apps(ctx context.Context) ([]dashboard.App, error) {
	var out []dashboard.App
	for _, a := range s.r.Config().Apps {
		app, err := s.app(ctx, a.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, app)
	}
	return out, nil
}

// App implements dashboard.Source.
func (s dashboardSource) App(ctx context.Context, name string) (dashboard.App, error) {
	app, err := s.app(ctx, name)
	if err != nil {
		return app, err
	}
	if app.Pulls, err = s.r.OpenPulls(ctx, name); err != nil {
		return dashboard.App{}, err
	}
	return app, nil
}

func (s dashboardSource) app(ctx context.Context, name string) (dashboard.App, error) {
	last, v, err := s.r.Last(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	rec, err := s.r.History(ctx, name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("reading the history of %s: %w", name, err)
	}
	st := rec.Status // a follower runs no passes: the leader's persisted status
	if last != nil && (st == nil || !last.ObservedAt.Before(st.ObservedAt)) {
		st = last
	}
	a, err := s.r.Config().App(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	// Who deploys the app (pinbot, argocd or flux) is the config's answer,
	// known before the first pass.
	return dashboard.App{Name: name, Source: string(a.Deployer()), Status: st, Verification: v, Record: rec}, nil
}
