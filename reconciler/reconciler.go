package reconciler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/ssa"
	"pinbot.dev/pinbot/registry"
)

// Reconciler runs the apps of one Config against one cluster. Its methods
// are safe for concurrent use; Close releases its watches.
type Reconciler struct {
	cfg     *Config
	kube    kubernetes.Interface
	dyn     dynamic.Interface // reads Argo CD's and Flux's objects (verifyonly.go)
	applier *ssa.Applier
	watcher *Watcher
	lives   *liveCache // watches of each app's inventory (diff_live.go)
	source  *Source
	lookups *lookupCache
	history *History
	report  *reporter
	token   string
	now     func() time.Time
	metrics *metrics
	caps    *capabilities // the cluster's, for Helm renders (render.go)

	mu   sync.Mutex
	apps map[string]*appState
}

type options struct {
	cacheDir string
	registry Registry
	forge    Forge
	token    string
	now      func() time.Time
	answer   time.Duration
}

// Option configures New.
type Option func(*options)

// WithAPIResponseTimeout sets how long a Kubernetes API request waits for
// the server to start answering. Default APIResponseTimeout.
func WithAPIResponseTimeout(d time.Duration) Option { return func(o *options) { o.answer = d } }

// WithCacheDir sets where Git clones are cached. Default DefaultCacheDir().
func WithCacheDir(dir string) Option { return func(o *options) { o.cacheDir = dir } }

// WithRegistry sets the registry client verification uses for config-digest
// and index-child lookups. Default registry.New(): credentials from the
// docker config keychain (DOCKER_CONFIG).
func WithRegistry(r Registry) Option { return func(o *options) { o.registry = r } }

// WithForge sets where commit statuses and pull-request comments go.
// Default: a *gitforge.Gitea for the config's forge section, if any.
func WithForge(f Forge) Option { return func(o *options) { o.forge = f } }

// WithForgeToken is the forge token used when the config's forge section
// names no tokenFile (the CLI passes $PINBOT_GITEA_TOKEN).
func WithForgeToken(token string) Option { return func(o *options) { o.token = token } }

// WithClock replaces time.Now, for tests of timeouts.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// New returns a Reconciler for cfg on the cluster rc points at. It makes
// no request.
func New(cfg *Config, rc *rest.Config, opts ...Option) (*Reconciler, error) {
	o := options{now: time.Now, answer: APIResponseTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.cacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		o.cacheDir = d
	}
	if o.registry == nil {
		reg, err := registry.New()
		if err != nil {
			return nil, err
		}
		o.registry = reg
	}
	rc = rest.CopyConfig(rc)
	rc.WrapTransport = boundResponses(rc.WrapTransport, o.answer)
	if rc.QPS == 0 {
		// client-go's default (5 QPS) would make a 500-object sync take
		// minutes; the API server's own priority and fairness still applies.
		rc.QPS, rc.Burst = 100, 200
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	r := &Reconciler{
		cfg:     cfg,
		kube:    kube,
		dyn:     dyn,
		applier: ssa.New(dyn, kube.Discovery()),
		source:  NewSource(o.cacheDir),
		lookups: newLookupCache(o.registry),
		history: NewHistory(kube, cfg.StateNamespace),
		token:   o.token,
		now:     o.now,
		caps:    newCapabilities(kube.Discovery(), o.now),
		apps:    map[string]*appState{},
	}
	r.metrics = newMetrics(r)
	r.watcher = NewWatcher(kube, r.changed)
	r.lives = newLiveCache(dyn, r.inventoryChanged)
	if o.forge == nil && cfg.Forge != nil {
		tok, err := readToken(cfg.Forge.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("forge: %w", err)
		}
		if tok == "" {
			tok = o.token
		}
		var gopts []gitforge.GiteaOption
		if cfg.Forge.CAFile != "" {
			gopts = append(gopts, gitforge.WithCAFile(cfg.Forge.CAFile))
		}
		g, err := gitforge.NewGitea(cfg.Forge.URL, tok, gopts...)
		if err != nil {
			return nil, err
		}
		o.forge = g
	}
	if cfg.Forge != nil {
		r.report = &reporter{forge: o.forge, forgeURL: cfg.Forge.URL, merged: lru.New(maxMerged)}
	}
	for i := range cfg.Apps {
		r.apps[cfg.Apps[i].Name] = &appState{trigger: make(chan struct{}, 1), observe: make(chan struct{}, 1)}
	}
	return r, nil
}

// Close stops the Reconciler's watches.
func (r *Reconciler) Close() {
	r.watcher.Close()
	r.lives.close()
}

// Config returns the Reconciler's configuration.
func (r *Reconciler) Config() *Config { return r.cfg }

func (r *Reconciler) app(name string) (*App, *appState, error) {
	a, err := r.cfg.App(name)
	if err != nil {
		return nil, nil, err
	}
	return a, r.apps[name], nil
}

// Trigger asks the running loop for a full pass of app now (a webhook, a
// benchmark); it never blocks.
func (r *Reconciler) Trigger(name string) error {
	_, st, err := r.app(name)
	if err != nil {
		return err
	}
	select {
	case st.trigger <- struct{}{}:
	default:
	}
	return nil
}

// changed is the Watcher's callback: wake the apps writing to namespace
// that wait for a verification.
func (r *Reconciler) changed(namespace string) {
	for i := range r.cfg.Apps {
		a := &r.cfg.Apps[i]
		st := r.apps[a.Name]
		if !slices.Contains(a.AllowNamespaces, namespace) && !st.watches(namespace) {
			continue
		}
		st.mu.Lock()
		awaiting := st.awaiting
		st.mu.Unlock()
		if awaiting {
			select {
			case st.observe <- struct{}{}:
			default:
			}
		}
	}
}

// Status computes app's status now, without applying, recording or
// reporting anything: it fetches Git, renders, compares with the cluster
// and verifies the Pods.
func (r *Reconciler) Status(ctx context.Context, name string) (*AppStatus, *Verification, error) {
	a, st, err := r.app(name)
	if err != nil {
		return nil, nil, err
	}
	return r.pass(ctx, a, st, modeObserve)
}

// Verify is Status's verification.
func (r *Reconciler) Verify(ctx context.Context, name string) (*Verification, error) {
	_, v, err := r.Status(ctx, name)
	return v, err
}

// Sync applies app's current commit once, as `pinbot sync` does, records
// the sync and reports it to the forge. With wait > 0 it then follows the
// rollout until the verification settles (verified, failed, or timed out
// after the app's verifyTimeout) or wait passes. opts apply to this sync
// only (SyncPrune).
func (r *Reconciler) Sync(ctx context.Context, name string, wait time.Duration, opts ...SyncOption) (*AppStatus, *Verification, error) {
	a, st, err := r.app(name)
	if err != nil {
		return nil, nil, err
	}
	if err := r.Check(ctx); err != nil { // before anything is applied
		return nil, nil, err
	}
	s, v, err := r.pass(withSyncOptions(ctx, opts), a, st, modeSync)
	if err != nil || wait <= 0 || !st.isAwaiting() {
		return s, v, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for st.isAwaiting() {
		select {
		case <-ctx.Done():
			return s, v, nil
		case <-st.observe:
		case <-tick.C:
		}
		s2, v2, err := r.pass(ctx, a, st, modeFollow)
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

// History returns app's recorded status and syncs, newest first.
func (r *Reconciler) History(ctx context.Context, name string) (*Record, error) {
	if _, _, err := r.app(name); err != nil {
		return nil, err
	}
	return r.history.Get(ctx, name)
}

// Check verifies what must hold before the loop starts: the history
// namespace exists.
func (r *Reconciler) Check(ctx context.Context) error { return r.history.Check(ctx) }

// auth returns app's Git credentials.
func (r *Reconciler) auth(app *App) (gitforge.Auth, error) {
	return credentials(r.cfg, app, r.token)
}
