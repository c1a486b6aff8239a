// Package serve is pinbot's long-running process: the reconcile loops of
// every app, Gitea's webhooks (routing, HMAC signatures, delivery
// deduplication), the drift schedules and promotion on push, the HTTP
// endpoints and the dashboard, and leader election among replicas with a
// trigger protocol through which followers forward what reaches them.
//
// Control goes one way: cmd wires serve, and serve drives the reconciler
// and promote; neither knows about serve.
//
// Only the leader writes: syncs, heals, prunes, commit statuses, comments
// and promotions. A follower forwards a push or a package event to the
// leader by annotating the ConfigMap pinbot-trigger in the state
// namespace, which the leader watches (trigger.go). With shards (package
// shard), each replica passes the apps of the shards it holds, and the
// leader keeps the promotions, drift schedules and release chains; a push
// then reaches each app's holder through the same ConfigMap.
package serve

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

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/coalesce"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/serve/admission"
	"pinbot.dev/pinbot/serve/attester"
	"pinbot.dev/pinbot/serve/chains"
	"pinbot.dev/pinbot/serve/notify"
	"pinbot.dev/pinbot/serve/proofs"
	"pinbot.dev/pinbot/serve/shard"
	"pinbot.dev/pinbot/serve/signin"
)

// DefaultShutdownTimeout bounds the shutdown: shorter than a Pod's default
// 30 s grace period.
const DefaultShutdownTimeout = 25 * time.Second

// Options say how Run runs; the flags of `pinbot serve` fill them.
type Options struct {
	// Listen is the HTTP address; "" serves no HTTP endpoint.
	Listen string
	// Secret is the webhook secret; required with Listen.
	Secret []byte
	// Dashboard serves / (the dashboard) and /readyz.
	Dashboard bool
	// Elect elects a leader through the Lease "pinbot" in the state
	// namespace (Lease); without it this process leads alone.
	Elect bool
	Lease Lease
	// Shards, with Elect, splits the apps into this many shards, each
	// passed by the replica that holds its Lease (package shard), instead
	// of the leader passing them all. The leader still runs what must be
	// single: promotions, the drift schedules and the release chains.
	Shards int
	// ShutdownTimeout bounds the pass in flight at SIGTERM. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Cache is the Git object cache promotions share with the reconciler
	// (reconciler.WithGitCache); nil fetches promotions into memory.
	Cache *gitforge.Cache
	// ReleaseInterval is how often the release chains are stepped.
	// Default chains.DefaultInterval.
	ReleaseInterval time.Duration
	// GateToken, when set, serves the gate endpoint (gate.Path) to
	// requests bearing it.
	GateToken []byte
	// ReadToken and AuthHeader guard the dashboard and its JSON API: a
	// request bearing the token (Authorization: Bearer), or carrying the
	// header an authenticating proxy sets, reads; with neither set,
	// anyone who reaches the port reads.
	ReadToken  []byte
	AuthHeader string
	// WebhookListen, when set, serves /webhook/gitea on this address of
	// its own, and no longer on Listen.
	WebhookListen string
	// NoWebhook serves no /webhook/gitea: the apps are passed at their
	// interval, and Secret is not needed (an install without one).
	NoWebhook bool
	// Collectors are more metrics for /metrics (the config reload's).
	Collectors []prometheus.Collector
	// proofs writes the apps' Proof objects (RunReloading's cluster);
	// nil writes none.
	proofs dynamic.Interface
}

// Validate checks the options as serve's flags set them; its errors name
// the flags.
func (o *Options) Validate() error {
	switch {
	case o.Dashboard && o.Listen == "":
		return errors.New("flag --listen: required")
	case o.WebhookListen != "" && o.Listen == "":
		return errors.New("flag --webhook-listen: needs --listen (the dashboard, metrics and probes)")
	case o.WebhookListen != "" && o.NoWebhook:
		return errors.New("flag --webhook-listen: serves the webhook, which --no-webhook turns off")
	case len(o.GateToken) > 0 && o.Listen == "":
		return errors.New("flag --gate-token-file: the gate endpoint needs --listen")
	case o.Shards < 0:
		return fmt.Errorf("flag --shards: want 0 (no sharding) or more, got %d", o.Shards)
	case o.Shards > 0 && !o.Elect:
		return errors.New("flag --shards: needs --leader-elect (the leader runs the promotions and the release chains)")
	case o.ShutdownTimeout <= 0:
		return fmt.Errorf("flag --shutdown-timeout: want a positive duration, got %s", o.ShutdownTimeout)
	case o.ReleaseInterval <= 0:
		return errors.New("flag --release-interval: must be positive")
	case o.Elect:
		return o.Lease.Validate()
	}
	return nil
}

// recordGrace is how long a pass cut off at the shutdown timeout gets to
// record that it was interrupted, before the Lease is released.
const recordGrace = 10 * time.Second

// daemon is one running serve.
type daemon struct {
	o        Options
	cfg      *Config
	r        *reconciler.Reconciler
	kube     kubernetes.Interface
	ns       string
	promote  *promoter // nil without a forge or promote entries
	drift    []driftJob
	release  *chains.Runner
	attester *attester.Attester // nil without attest:
	notify   *notify.Notifier   // nil without notify entries
	// admission is the validating admission webhook; nil without
	// admission:.
	admission *admission.Webhook
	signin    *signin.SignIn // the dashboard's sign-in; nil without dashboard.oidc

	metrics    *prometheus.Registry
	requests   *prometheus.CounterVec   // pinbot_webhook_requests_total
	pushApps   *prometheus.CounterVec   // pinbot_push_apps_total
	refusals   *prometheus.CounterVec   // pinbot_promotions_refused_total
	promotions *prometheus.HistogramVec // pinbot_promote_duration_seconds
	ready      atomic.Bool              // /readyz: the loops or, electing, the elector run
	checked    atomic.Bool              // /readyz: the state namespace was found on the API server
	leading    atomic.Bool
	draining   atomic.Bool // SIGTERM: webhooks answer 503

	cutMu sync.Mutex
	cut   context.CancelFunc // ends the loops' context: the pass in flight is cut off

	shards     *shard.Manager // with Options.Shards; set before the server starts
	stopShards func()         // gives every shard up, after its passes end
	cutShards  context.CancelFunc
	shardsDone chan struct{}

	// pushes coalesces the answers to pushes of one branch: a storm of
	// webhooks costs a fetch or two, not one each (trigger.go).
	pushes coalesce.Fresh[[]string]
}

// Run runs serve until ctx ends (SIGTERM, SIGINT), then shuts down:
// webhooks answer 503, the loops get up to the shutdown timeout to stop,
// the Lease is released and the server closes. A missing state namespace
// stops it before anything else.
func Run(ctx context.Context, cfg *Config, r *reconciler.Reconciler, kube kubernetes.Interface, o Options) error {
	d, err := newDaemon(cfg, r, kube, o)
	if err != nil {
		return err
	}
	return d.run(ctx)
}

// notifyProof sends a change of an app's proof to the notify targets,
// with the environments the app is in.
func (d *daemon) notifyProof(e reconciler.ProofEvent) {
	typ := notify.Normal
	if e.Warning {
		typ = notify.Warning
	}
	d.notify.Send(notify.Event{Type: typ, Reason: e.Reason, App: e.App, Envs: d.release.EnvsOf(e.App), Message: e.Message})
}

// newDaemon sets serve up: the promoter, the drift jobs and the metrics.
func newDaemon(cfg *Config, r *reconciler.Reconciler, kube kubernetes.Interface, o Options) (*daemon, error) {
	if o.Listen != "" && len(o.Secret) == 0 && !o.NoWebhook {
		return nil, errors.New("serving webhooks needs a secret")
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Lease.ID == "" {
		o.Lease.ID = hostname()
	}
	d := &daemon{o: o, cfg: cfg, r: r, kube: kube, ns: cfg.StateNamespace, metrics: prometheus.NewRegistry(), requests: newWebhookCounter(), pushApps: newPushCounter()}
	var err error
	if d.promote, err = newPromoter(cfg, o.Cache); err != nil {
		return nil, err
	}
	if cfg.Admission != nil {
		d.admission = newWebhook(d, *cfg.Admission)
	}
	if o := cfg.Dashboard.OIDC; o != nil {
		c, err := o.Config()
		if err == nil {
			d.signin, err = signin.New(c, &http.Client{Timeout: 15 * time.Second})
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.File(), err)
		}
	}
	if len(cfg.Notify) > 0 {
		if d.notify, err = notify.New(cfg.Notify, notify.Options{}); err != nil {
			return nil, err
		}
	}
	d.release = newRunner(d)
	if cfg.Attest != nil && d.promote != nil {
		key, err := cfg.Attest.key()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.File(), err)
		}
		d.attester = attester.New(d.release, d.promote.reg, d.clusterOf, key, cfg.Attest.Format, cfg.Attest.VerifierID)
		d.release.OnEvent(d.attester.Observe)
	}
	d.refusals = newRefusalCounter()
	d.promotions = newPromoteHistogram()
	if d.promote != nil {
		d.promote.gate = d.release.Admit
		d.promote.refused = d.refused
		d.promote.took = func(kind string, dur time.Duration) { d.promotions.WithLabelValues(kind).Observe(dur.Seconds()) }
	}
	if d.drift, err = d.promote.driftJobs(cfg, d.release); err != nil {
		return nil, err
	}
	if err := d.registerMetrics(); err != nil {
		return nil, err
	}
	return d, nil
}

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

// leads reports whether this process writes: it leads, or does not elect.
func (d *daemon) leads() bool { return !d.o.Elect || d.leading.Load() }

func (d *daemon) run(ctx context.Context) error {
	log := logctx.From(ctx)
	err := d.r.Check(ctx)
	if errors.Is(err, record.ErrNoStateNamespace) {
		return err
	}
	// The shutdown runs on a context of its own: ctx's end starts it.
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	if err == nil {
		d.checked.Store(true)
	} else {
		// The API server did not answer: not ready until it does.
		log.Warn("cannot check the state namespace yet; /readyz answers 503 until the API server answers", "error", err.Error())
		go d.recheck(work)
	}

	if d.sharded() {
		if d.shards, err = d.newShards(ctx); err != nil {
			return err
		}
	}
	// A changed proof steps the chains that count the app and rewrites
	// its Proof object.
	// The ledgers' readers (admission, the gate, the page) read a watch.
	go d.release.Ledgers().Watch(work)
	var published *proofs.Publisher
	if d.o.proofs != nil {
		published = proofs.New(d.o.proofs, d.r)
		go published.Run(work)
	}
	d.r.OnProofChange(func(app string) { d.release.ProofChanged(app); published.Changed(app) })
	defer d.r.OnProofChange(func(string) {})
	if d.notify != nil {
		d.notify.Run(work)
		d.r.OnProofEvent(d.notifyProof)
		defer d.r.OnProofEvent(nil)
	}

	served, err := d.serve(ctx, work)
	if err != nil {
		return err
	}

	if err := d.serveAdmission(ctx, work); err != nil {
		return err
	}

	// SIGTERM (ctx's end) stops the loops from starting passes; work,
	// ended after the shutdown timeout, bounds the pass in flight.
	stop := ctx.Done()
	loopDone := make(chan error, 1)
	lost := make(chan struct{})
	if !d.o.Elect {
		d.ready.Store(true)
		loopCtx := d.loopContext(work)
		go func() { loopDone <- d.loops(loopCtx, stop) }()
		return d.wait(ctx, loopDone, lost, served, func() {}, nil, stopWork)
	}
	le, err := d.o.Lease.elector(d.kube, d.ns, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(lctx context.Context) {
			log.Info("leading", "lease", d.ns+"/"+leaseName, "id", d.o.Lease.ID)
			d.leading.Store(true)
			h := triggerHandlers{promote: func(p promoteRequest) { go d.promoteForwarded(lctx, p) }}
			if !d.sharded() { // else each replica answers for its own shards
				h.app = func(app string) { _ = d.r.Trigger(app) }
				h.push = func(p pushRequest) { go d.triggerPushed(lctx, p) }
			}
			if err := watchTriggers(lctx, d.kube, d.ns, h); err != nil && lctx.Err() == nil {
				loopDone <- err
				return
			}
			loopDone <- d.loops(d.loopContext(lctx), stop)
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
	if d.sharded() {
		if err := d.runShards(work); err != nil {
			return err
		}
	}
	electDone := make(chan struct{})
	electCtx, stopElect := context.WithCancel(work)
	go func() { defer close(electDone); le.Run(electCtx) }()
	d.ready.Store(true)
	return d.wait(ctx, loopDone, lost, served, stopElect, electDone, stopWork)
}

// serve serves the dashboard, the API and the webhooks on --listen (the
// webhooks on --webhook-listen apart, when set) until work ends; the
// channel it returns reports the end, nil (never ready) without --listen.
func (d *daemon) serve(ctx, work context.Context) (chan error, error) {
	if d.o.Listen == "" {
		return nil, nil
	}
	log := logctx.From(ctx)
	served := make(chan error, 1)
	ln, err := net.Listen("tcp", d.o.Listen)
	if err != nil {
		return nil, fmt.Errorf("flag --listen: %w", err)
	}
	log.Info("serving", "addr", ln.Addr().String())
	if d.o.WebhookListen == "" {
		go func() { served <- serveHTTP(work, ln, d.mux(!d.o.NoWebhook)) }()
		return served, nil
	}
	hl, err := net.Listen("tcp", d.o.WebhookListen)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("flag --webhook-listen: %w", err)
	}
	log.Info("serving webhooks", "addr", hl.Addr().String())
	both := make(chan error, 2)
	go func() { both <- serveHTTP(work, ln, d.mux(false)) }()
	go func() { both <- serveHTTP(work, hl, d.webhookMux()) }()
	go func() {
		// The first to end ends serve; the other then ends with work.
		first := <-both
		served <- errors.Join(first, <-both)
	}()
	return served, nil
}

// loops runs what only the leader does until ctx ends: the reconcile
// loops and the drift schedules. Closing stop ends the loops after the
// pass in flight (bounded by ctx).
func (d *daemon) loops(ctx context.Context, stop <-chan struct{}) error {
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
	released := make(chan struct{})
	go func() { defer close(released); d.release.Run(driftCtx) }()
	if a := d.attester; a != nil {
		go a.Run(driftCtx)
	}
	var err error
	if d.sharded() { // the shards' holders pass the apps
		select {
		case <-ctx.Done():
		case <-stop:
		}
	} else {
		err = d.r.RunUntil(ctx, stop)
	}
	cancel() // the drift schedules and the release chains stop with the loops
	<-released
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
		log.Info("shutting down", "timeout", d.o.ShutdownTimeout)
		if d.leads() {
			select {
			case err = <-loopDone:
			case <-time.After(d.o.ShutdownTimeout):
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
		if err == nil && ctx.Err() == nil && d.o.Elect {
			err = errors.New("the reconcile loops stopped")
		}
	case <-lost:
		err = errors.New("lost the leader lease " + d.ns + "/" + leaseName)
	case err = <-served:
		if err == nil {
			err = errors.New("the HTTP server stopped")
		}
	}
	d.endShards(log)
	stopElect() // releases the Lease (ReleaseOnCancel)
	if electDone != nil {
		<-electDone
	}
	stopWork()
	if served != nil {
		err = errors.Join(err, <-served)
	}
	return err
}

// DefaultID is a replica's identity when --id names none: the hostname,
// which is the Pod's name in a Deployment.
func DefaultID() string { return hostname() }

// hostname is the Lease holder's default identity.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "pinbot"
	}
	return h
}
