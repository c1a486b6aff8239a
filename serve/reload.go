package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/discover"
)

// DefaultReloadInterval is how often serve looks at its config file. A
// mounted ConfigMap changes by an atomic swap of a symlink, which file
// events follow badly; a read of a small file every few seconds is
// cheap and always right.
const DefaultReloadInterval = 5 * time.Second

// RunReloading runs serve (Run) on the config src holds, and, in the same
// process, on each new valid config the file holds: the old turn shuts
// down as at SIGTERM (the pass in flight ends, the Lease is released)
// before the new one starts. A change of the apps its discover: entries
// select is applied in place: only the loops of the apps that came or
// went start or stop. A change that fails to validate or to open is logged
// with its reason and counted, and serve keeps the config it runs. The
// first config failing is the error.
func RunReloading(ctx context.Context, src Source, o Options) error {
	l := newReloader(ctx, src)
	o.Collectors = append(o.Collectors, l.collectors()...)
	cur, err := l.open(ctx)
	if err != nil {
		return err
	}
	kube, err := src.Kube()
	if err == nil {
		o.proofs, err = src.Dynamic()
	}
	if err != nil {
		cur.r.Close()
		return err
	}
	for {
		o.Cache = cur.cache
		turnCtx, cancel := context.WithCancel(ctx)
		next := make(chan turn, 1)
		go func(cur turn) {
			if t, ok := l.next(turnCtx, &cur); ok {
				next <- t
				cancel()
			}
		}(cur)
		err := Run(turnCtx, cur.cfg, cur.r, kube, o)
		cancel()
		cur.r.Close()
		select {
		case t := <-next:
			if ctx.Err() != nil {
				t.r.Close()
				return err
			}
			cur = t
		default:
			return err
		}
	}
}

// turn is what serve runs on until the config changes: the Reconciler,
// its config (its apps include the discovered, after its own) and Git
// cache.
type turn struct {
	r     *reconciler.Reconciler
	cfg   *Config
	cache *gitforge.Cache
}

// reloader watches serve's config file and the deployer objects its
// discover: entries select. A change is validated and opened (a
// Reconciler built on it) before serve stops the old one.
type reloader struct {
	src Source
	sum [sha256.Size]byte // of the file serve runs on, or last refused
	dyn dynamic.Interface // for discover:, made on first use

	// life is serve's: the Watcher of the discover: entries outlives
	// the turns, and is replaced only when the entries change.
	life      context.Context
	watch     *discover.Watcher
	watchOf   []config.Discovery
	stopWatch context.CancelFunc

	reloads *prometheus.CounterVec // pinbot_config_reloads_total{result}
	ok      prometheus.Gauge       // pinbot_config_last_reload_successful
	// rediscoveries counts changes of the discovered apps applied in place.
	rediscoveries prometheus.Counter // pinbot_discovery_changes_total
}

func newReloader(life context.Context, src Source) *reloader {
	if src.Every <= 0 {
		src.Every = DefaultReloadInterval
	}
	return &reloader{
		src:  src,
		life: life,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_config_reloads_total",
			Help: "Changes of serve's config file seen, by result: applied, or refused (invalid; serve kept the config it had).",
		}, []string{"result"}),
		ok: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pinbot_config_last_reload_successful",
			Help: "1 unless the config file's last change was refused; serve then runs on the config it had.",
		}),
		rediscoveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pinbot_discovery_changes_total",
			Help: "Changes of the apps discover: selects, applied in place: only the apps that came or went start or stop.",
		}),
	}
}

// collectors are the reloader's metrics, for serve's registry.
func (l *reloader) collectors() []prometheus.Collector {
	l.ok.Set(1)
	l.reloads.WithLabelValues("applied")
	l.reloads.WithLabelValues("refused")
	return []prometheus.Collector{l.reloads, l.ok, l.rediscoveries}
}

// open loads the config file, adds the apps its discover: entries select
// now, and builds the Reconciler; it notes the file's content as the one
// serve runs on.
func (l *reloader) open(ctx context.Context) (turn, error) {
	cfg, err := l.src.config(ctx, l.discovered)
	if err != nil {
		return turn{}, err
	}
	// Read as Load read it: a regular file, bounded, never a FIFO's wait.
	data, _ := opfile.Read(l.src.File, config.MaxFile)
	if len(cfg.Discover) == 0 {
		l.unwatch() // discover: is gone from the config: so is its watch
	}
	r, cache, err := l.src.Build(cfg, reconciler.WithDiscovery(l.watch))
	if err != nil {
		return turn{}, err
	}
	l.sum = sha256.Sum256(data)
	return turn{r: r, cfg: cfg, cache: cache}, nil
}

// discovered returns the apps ds select now, from the caches of a
// Watcher of ds (started on first use, and again when the entries
// change): serve's start reads the selected objects once, in the
// informers' first list, and a rediscovery reads nothing more.
func (l *reloader) discovered(ctx context.Context, ds []config.Discovery) ([]config.App, error) {
	if l.watch == nil || !reflect.DeepEqual(l.watchOf, ds) {
		dyn, err := l.dynamic()
		if err != nil {
			return nil, err
		}
		l.unwatch()
		life, stop := context.WithCancel(l.life)
		l.watch, l.watchOf, l.stopWatch = discover.Watch(life, dyn, ds), ds, stop
	}
	if err := l.watch.Synced(ctx); err != nil {
		return nil, err
	}
	return l.watch.Apps(), nil
}

// unwatch stops the Watcher of the discover: entries, if any.
func (l *reloader) unwatch() {
	if l.stopWatch != nil {
		l.stopWatch()
	}
	l.watch, l.watchOf, l.stopWatch = nil, nil, nil
}

func (l *reloader) dynamic() (dynamic.Interface, error) {
	var err error
	if l.dyn == nil {
		l.dyn, err = l.src.Dynamic()
	}
	return l.dyn, err
}

// next blocks until the file holds a new valid config, or the apps that
// cur's discover: entries select change, and returns the new turn; ok is
// false when ctx ended first.
func (l *reloader) next(ctx context.Context, cur *turn) (next turn, ok bool) {
	log := logctx.From(ctx)
	var changed <-chan struct{}
	if len(cur.cfg.Discover) > 0 && l.watch != nil {
		changed = l.watch.Changed()
	}
	tick := time.NewTicker(l.src.Every)
	defer tick.Stop()
	pending := false // the discovered apps changed, and the reopen failed
	for {
		select {
		case <-ctx.Done():
			return turn{}, false
		case <-changed:
			// Applied at the next look: a burst of changes (many objects
			// created at once) is one restart, not one each.
			if !pending {
				log.Info("the apps discover: selects changed; their loops start or stop at the next look")
			}
			pending = true
			continue
		case <-tick.C:
		}
		data, err := opfile.Read(l.src.File, config.MaxFile)
		if err != nil {
			// A ConfigMap's swap, or a file being written: the next look.
			log.Debug("cannot read the config file", "file", l.src.File, "error", err.Error())
			continue
		}
		sum := sha256.Sum256(data)
		fileChanged := !bytes.Equal(sum[:], l.sum[:])
		if !fileChanged && !pending {
			continue
		}
		if !fileChanged {
			// Only what discover: selects changed: the apps that came
			// start, those gone stop, and every other loop runs on.
			if err := l.rediscover(ctx, cur); err != nil {
				log.Error("cannot apply the discovered apps yet; serve keeps the ones it runs and tries again", "error", err.Error())
				continue
			}
			pending = false
			continue
		}
		t, err := l.open(ctx)
		switch {
		case err != nil && fileChanged:
			l.sum = sum // refused once, not again at every look
			l.reloads.WithLabelValues("refused").Inc()
			l.ok.Set(0)
			log.Error("the config file changed, but the new config is refused; serve keeps the one it runs", "file", l.src.File, "error", err.Error())
			continue
		case err != nil:
			log.Error("cannot apply the discovered apps yet; serve keeps the ones it runs and tries again", "error", err.Error())
			continue
		}
		if fileChanged {
			l.reloads.WithLabelValues("applied").Inc()
			l.ok.Set(1)
			log.Info("the config file changed; serve restarts its loops on the new config", "file", l.src.File, "apps", len(t.cfg.Apps))
		}
		return t, true
	}
}

// rediscover applies a change of the apps cur's discover: entries select
// to its running Reconciler (reconciler.Reconciler.SetApps). The Watcher
// notes them as reported: the next change is one from these.
func (l *reloader) rediscover(ctx context.Context, cur *turn) error {
	cfg, err := l.src.config(ctx, l.discovered)
	if err != nil {
		return err
	}
	added, removed := cur.r.SetApps(cfg.Apps)
	l.rediscoveries.Inc()
	logctx.From(ctx).Info("the apps discover: selects changed; only theirs start and stop", "started", added, "stopped", removed, "apps", len(cfg.Apps))
	return nil
}
