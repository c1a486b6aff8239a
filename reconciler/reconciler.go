package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/httpbound"
	"pinbot.dev/pinbot/internal/kubeclient"
	"pinbot.dev/pinbot/reconciler/chartrepo"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/cluster/argoapi"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployed"
	"pinbot.dev/pinbot/reconciler/discover"
	"pinbot.dev/pinbot/reconciler/events"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/lookup"
	"pinbot.dev/pinbot/reconciler/metrics"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/report"
	"pinbot.dev/pinbot/reconciler/spoke"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/render"
	"pinbot.dev/pinbot/trust"
)

// Reconciler runs the apps of one Config against one cluster. Its methods
// are safe for concurrent use; passes of one app take turns. Close
// releases its watches.
type Reconciler struct {
	set       atomic.Pointer[appSet] // the config and the apps' states (apps.go)
	setMu     sync.Mutex             // serializes SetApps
	runs      runs                   // the RunSome under way (apps.go)
	kube      kubernetes.Interface
	answer    time.Duration    // WithAPIResponseTimeout
	local     *cluster.Cluster // the cluster pinbot runs against
	argo      *argoapi.Access  // reads through Argo CD's API server
	remotes   *cluster.Remotes // the spokes Argo CD and Flux name (clusterof.go)
	events    *events.Recorder // Events on the apps and workloads verified (events.go)
	source    *gitsource.Source
	lookups   *lookup.Cache
	mirrors   []verdict.Mirror // cfg.Rules(), normalised once
	confirmed sync.Map         // app -> proofOf its last confirmed Verified verification
	history   *record.History
	report    *report.Reporter
	observer  *observer // verify-only apps (observer.go)
	token     string
	now       func() time.Time
	replica   string                      // WithReplica
	log       atomic.Pointer[slog.Logger] // the loop's (RunSome), for callbacks
	route     *router                     // wakes the loops a cluster's change concerns (wake.go)
	metrics   *metrics.Metrics
	caps      func() (render.Capabilities, error) // the cluster's, for Helm renders (render.Cached)
	loopSlots chan struct{}                       // bounds the loop's passes under way (loop.go)
	stored    metrics.Stored                      // the leader's, for a follower's metrics
	onProof   atomic.Pointer[func(app string)]    // OnProofChange
	onEvent   atomic.Pointer[func(e ProofEvent)]  // OnProofEvent
	// signatures is cfg.Signatures with its keys loaded, and reg the
	// registry it reads signatures from (verifySignatures).
	signatures *trust.Verifier
	reg        lookup.Registry
	charts     *chartrepo.Repos // the charts of Helm repositories Argo CD apps name
	trust      spoke.Trust      // what others' cluster credentials may carry (WithSpokeTrust)
}

type options struct {
	cacheDir  string
	gitCache  *gitforge.Cache
	registry  lookup.Registry
	forge     report.Forge
	token     string
	answer    time.Duration
	noForge   bool
	replica   string
	trust     spoke.Trust
	downAft   time.Duration
	discovery *discover.Watcher
}

// Option configures New.
type Option func(*options)

// QPS and Burst are the client-side rate limit of pinbot's clients of a
// cluster (a rest.Config that sets none): client-go's default, 5 a
// second, would make a 500-object sync take minutes, and held a serve
// leader's requests 47 s in all while 10,000 apps started. The API
// server's own priority and fairness still applies.
const (
	QPS   = 100
	Burst = 200
)

// WithAPIResponseTimeout sets how long a Kubernetes API request waits for
// the server to start answering. Default APIResponseTimeout.
func WithAPIResponseTimeout(d time.Duration) Option { return func(o *options) { o.answer = d } }

// WithClusterDownAfter sets how long a cluster whose watches failed may
// go unanswered before its apps say Unknown, without waiting for their
// next pass. Default cluster.DefaultDownAfter.
func WithClusterDownAfter(d time.Duration) Option { return func(o *options) { o.downAft = d } }

// WithCacheDir sets where Git objects are cached, under dir/git. Default
// gitsource.DefaultCacheDir().
func WithCacheDir(dir string) Option { return func(o *options) { o.cacheDir = dir } }

// WithGitCache shares cache, one other parts of the process use too (pinbot
// serve's promotions), instead of one under the cache directory.
func WithGitCache(cache *gitforge.Cache) Option { return func(o *options) { o.gitCache = cache } }

// WithRegistry sets the registry client verification uses for config-digest
// and index-child lookups. Default registry.New(): credentials from the
// docker config keychain (DOCKER_CONFIG), then, for the forge's own
// registry, the forge token.
func WithRegistry(r lookup.Registry) Option { return func(o *options) { o.registry = r } }

// WithForge sets where commit statuses and pull-request comments go.
// Default: a *gitforge.Gitea for the config's forge section, if any.
func WithForge(f report.Forge) Option { return func(o *options) { o.forge = f } }

// WithForgeToken is the forge token used when the config's forge section
// names no tokenFile. Default $PINBOT_GITEA_TOKEN.
func WithForgeToken(token string) Option { return func(o *options) { o.token = token } }

// WithoutForge makes a Reconciler that reads only what pinbot stored in
// the cluster (history, stored status): it neither reads the forge's
// token nor reports to the forge. For read commands.
func WithoutForge() Option { return func(o *options) { o.noForge = true } }

// WithReplica names the replica of serve that runs the passes, for the
// statuses they store (status.App.Replica): with shards, which replica
// passes an app. A shard keeps a namespace's apps together
// (config.App.ShardKey), so such a replica's Pod caches hold the
// namespaces of the apps it passes, each dropped once the last of them
// goes to another replica (cluster.Handlers.PerNamespace), not the
// whole cluster.
func WithReplica(id string) Option { return func(o *options) { o.replica = id } }

// WithDiscovery has the reads of the deployers' objects share w's
// watches (serve's discover: entries), so that the API server sends this
// process each object they hold once. nil shares none.
func WithDiscovery(w *discover.Watcher) Option { return func(o *options) { o.discovery = w } }

// WithSpokeTrust sets what the cluster credentials others write (Flux
// kubeConfig Secrets, Argo CD cluster Secrets) may carry besides data, and
// where Argo CD cluster Secrets are read. Default spoke.DefaultTrust().
func WithSpokeTrust(t spoke.Trust) Option { return func(o *options) { o.trust = t } }

// APIResponseTimeout bounds how long one request to the Kubernetes API
// waits for the server to start answering. An API server that accepts the
// connection and never answers fails the request after it (a transient
// fault, retried with backoff) instead of hanging the app's pass. Watches
// are not cut: their headers come at once, and the stream may then stay
// quiet for as long as nothing changes.
//
// It stays under client-go's HTTP/2 health check (a ping after 30s of
// silence, the connection dropped 15s later): client-go retries a GET
// whose connection was dropped up to ten times, so without this bound a
// stalled server held each GET for eight minutes.
const APIResponseTimeout = 40 * time.Second

// New returns a Reconciler for cfg on the cluster rc points at. It makes
// no request.
func New(cfg *config.Config, rc *rest.Config, opts ...Option) (*Reconciler, error) {
	o := options{answer: APIResponseTimeout, trust: spoke.DefaultTrust()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.gitCache == nil {
		if o.cacheDir == "" {
			d, err := gitsource.DefaultCacheDir()
			if err != nil {
				return nil, err
			}
			o.cacheDir = d
		}
		c, err := gitforge.NewCache(o.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("opening the Git cache: %w", err)
		}
		o.gitCache = c
	}
	if o.registry == nil {
		var opts []registry.Option
		if cfg.Forge != nil {
			// Gitea's own registry is behind the forge's CA, as a rule,
			// and reads packages with the forge token.
			opts = append(opts, registry.WithCAFile(cfg.Forge.CAFile))
			if tok := o.token; tok != "" {
				opts = append(opts, registry.WithForgeToken(cfg.Forge.URL, tok))
			} else if tok, err := gitforge.ResolveToken(cfg.Forge.TokenFile); err == nil {
				opts = append(opts, registry.WithForgeToken(cfg.Forge.URL, tok))
			}
		}
		reg, err := registry.New(opts...)
		if err != nil {
			return nil, err
		}
		o.registry = reg
	}
	rc = rest.CopyConfig(rc)
	rc.WrapTransport = httpbound.WrapAfter(rc.WrapTransport, o.answer)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = QPS, Burst
	}
	kube, err := kubeclient.New(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	// The policy's keys sit beside the config (a mounted Secret), which
	// pinbot's operator owns: they are read as any config file is.
	signatures, err := trust.Compile(cfg.Signatures, os.DirFS(cfg.SignaturesDir()))
	if err != nil {
		return nil, fmt.Errorf("the config's signature policy: %w", err)
	}
	r := &Reconciler{
		signatures: signatures,
		reg:        o.registry,
		kube:       kube,
		source:     gitsource.New(o.gitCache),
		lookups:    lookup.New(o.registry),
		charts:     chartrepo.New(o.registry),
		mirrors:    cfg.Rules(),
		history:    record.New(kube, cfg.StateNamespace),
		token:      o.token,
		answer:     o.answer,
		now:        time.Now,
		replica:    o.replica,
		trust:      o.trust,
		caps:       render.Cached(kube.Discovery()),
		loopSlots:  make(chan struct{}, loopPasses),
	}
	r.metrics = metrics.New(r.statuses)
	r.route = &router{set: &r.set, log: &r.log, downAfter: o.downAft, narrow: o.replica != ""}
	h := r.route.handlers()
	h.ObjectChanged = r.route.objectChanged
	if r.route.narrow {
		h.ReadsObject = r.route.passedHere
	}
	r.local = cluster.New("", "", kube, dyn, md, h, 0)
	r.remotes = cluster.NewRemotes(kube, o.trust, o.answer, rc.UserAgent, r.route.handlers())
	r.argo = argoapi.New(func() *argoapi.Server {
		if s := r.Config().ArgoCD; s != nil {
			return &argoapi.Server{URL: s.URL, TokenFile: s.TokenFile, CAFile: s.CAFile}
		}
		return nil
	}, o.answer, r.mirrors)
	r.events = events.New(kube)
	r.observer = &observer{r: r, deployed: &deployed.Reader{Objects: r.local.Objects, Kube: kube}}
	if o.forge == nil && cfg.Forge != nil && !o.noForge {
		g, err := gitforge.Dial(cfg.Forge.URL, cfg.Forge.TokenFile, cfg.Forge.CAFile, o.token)
		if err != nil {
			return nil, err
		}
		o.forge = g
	}
	if cfg.Forge != nil && !o.noForge {
		r.report = report.New(o.forge, cfg.Forge.URL)
	}
	r.set.Store(newAppSet(cfg, nil))
	if o.discovery != nil { // last, after the apps their callbacks read: a Reconciler not made keeps them as they were
		for _, s := range o.discovery.Shares() {
			r.local.Objects.Share(s)
		}
	}
	return r, nil
}

// Close stops the Reconciler's watches.
func (r *Reconciler) Close() {
	r.local.Close()
	r.remotes.Close()
	r.events.Close()
	r.history.Close()
}

// Status computes app's status now, without applying, recording or
// reporting anything: it fetches Git, renders, compares with the cluster
// and verifies the Pods.
func (r *Reconciler) Status(ctx context.Context, name string) (*status.App, *verdict.Verification, error) {
	a, st, err := r.app(name)
	if err != nil {
		return nil, nil, err
	}
	return r.pass(ctx, a, st, modeObserve, nil)
}

// Await proves app as Status does (as Report does, with report) until
// it is verified or wait passes, proving again at each change of its Pods
// and at least every second, and returns the last proof; with wait 0 it
// proves once. A proof that cannot be made ends it, unless it is a
// passing hiccup.
func (r *Reconciler) Await(ctx context.Context, name string, wait time.Duration, report bool) (*status.App, *verdict.Verification, error) {
	prove := r.Status
	if report {
		prove = r.Report
	}
	if wait <= 0 {
		return prove(ctx, name)
	}
	_, st, err := r.app(name)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s, v, err := prove(ctx, name)
	if err != nil {
		return s, v, err
	}
	return follow(ctx, st, s, v, func(ctx context.Context) (*status.App, *verdict.Verification, error) { return prove(ctx, name) },
		func(v *verdict.Verification) bool { return v != nil && v.Verified })
}

// follow waits for a change of st's Pods (at most a second), then runs
// step, until done says the last proof is final or ctx ends, and returns
// the last proof; a retryable error only tries again.
func follow(ctx context.Context, st *appState, s *status.App, v *verdict.Verification,
	step func(context.Context) (*status.App, *verdict.Verification, error), done func(*verdict.Verification) bool) (*status.App, *verdict.Verification, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !done(v) {
		select {
		case <-ctx.Done():
			return s, v, nil
		case <-st.observe:
		case <-tick.C:
		}
		s2, v2, err := step(ctx)
		switch {
		case ctx.Err() != nil:
			return s, v, nil
		case err != nil && retryable(err):
			continue // a hiccup: the next event or tick tries again
		case err != nil:
			return s2, v2, err
		}
		s, v = s2, v2
	}
	return s, v, nil
}

// Verify is Status's verification.
func (r *Reconciler) Verify(ctx context.Context, name string) (*verdict.Verification, error) {
	_, v, err := r.Status(ctx, name)
	return v, err
}

// SyncOption changes one call of Reconciler.Sync or Reconciler.DryRun.
type SyncOption func(*syncOptions)

// syncOptions are one Sync call's options: they belong to this request
// only, and a concurrent loop pass of the same app does not see them.
type syncOptions struct {
	prune bool
}

// SyncPrune prunes in this sync even when the app's policy has prune off,
// as `pinbot sync --prune` does. The guards still hold (see prune.Plan).
func SyncPrune() SyncOption { return func(o *syncOptions) { o.prune = true } }

func syncOptionsOf(opts []SyncOption) syncOptions {
	var o syncOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Sync applies app's current commit once, as `pinbot sync` does, records
// the sync and reports it to the forge. With wait > 0 it then follows the
// rollout until the verification settles (verified, failed, or timed out
// after the app's verifyTimeout) or wait passes. opts apply to this sync
// only (SyncPrune).
func (r *Reconciler) Sync(ctx context.Context, name string, wait time.Duration, opts ...SyncOption) (*status.App, *verdict.Verification, error) {
	a, st, err := r.app(name)
	if err != nil {
		return nil, nil, err
	}
	if err := r.Check(ctx); err != nil { // before anything is applied
		return nil, nil, err
	}
	so := syncOptionsOf(opts)
	s, v, err := r.pass(ctx, a, st, modeSync, &so)
	if err != nil || wait <= 0 || !st.awaiting.Load() {
		return s, v, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return follow(ctx, st, s, v, func(ctx context.Context) (*status.App, *verdict.Verification, error) {
		return r.pass(ctx, a, st, modeFollow, nil)
	},
		func(*verdict.Verification) bool { return !st.awaiting.Load() })
}

// History returns app's recorded status and syncs, newest first.
func (r *Reconciler) History(ctx context.Context, name string) (*history.Record, error) {
	if _, _, err := r.app(name); err != nil {
		return nil, err
	}
	return r.history.Get(ctx, name)
}

// StoredStatus is the status the reconcile loop last stored for app,
// read without fetching Git.
func (r *Reconciler) StoredStatus(ctx context.Context, name string) (*status.App, error) {
	rec, err := r.History(ctx, name)
	if err != nil {
		return nil, err
	}
	if rec.Status == nil {
		return nil, errors.New("no status stored yet: is pinbot serve running?")
	}
	return rec.Status, nil
}

// Check verifies what must hold before the loop starts: the history
// namespace exists.
func (r *Reconciler) Check(ctx context.Context) error { return r.history.Check(ctx) }
