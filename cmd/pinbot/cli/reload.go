package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/discover"
	"pinbot.dev/pinbot/serve"
)

// DefaultReloadInterval is how often serve looks at its config file. A
// mounted ConfigMap changes by an atomic swap of a symlink, which file
// events follow badly; a read of a small file every few seconds is
// cheap and always right.
const DefaultReloadInterval = 5 * time.Second

// turn is what serve runs on until the config changes: the Reconciler,
// its config, and the apps the config's discover: entries selected (its
// apps include them, after its own).
type turn struct {
	r          *reconciler.Reconciler
	cfg        *serve.Config
	discovered []config.App
}

// reloader watches serve's config file and the deployer objects its
// discover: entries select. A change is validated and opened (a
// Reconciler built on it) before serve stops the old one; a config that
// fails either is logged with its reason and counted, and serve keeps
// running on the one it has.
type reloader struct {
	f     *reconcilerFlags
	every time.Duration
	sum   [sha256.Size]byte // of the file serve runs on, or last refused
	dyn   dynamic.Interface // for discover:, made on first use
	opts  []reconciler.Option

	reloads *prometheus.CounterVec // pinbot_config_reloads_total{result}
	ok      prometheus.Gauge       // pinbot_config_last_reload_successful
}

func newReloader(f *reconcilerFlags, every time.Duration) *reloader {
	return &reloader{
		f: f, every: every,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_config_reloads_total",
			Help: "Changes of serve's config file seen, by result: applied, or refused (invalid; serve kept the config it had).",
		}, []string{"result"}),
		ok: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pinbot_config_last_reload_successful",
			Help: "1 unless the config file's last change was refused; serve then runs on the config it had.",
		}),
	}
}

// collectors are the reloader's metrics, for serve's registry.
func (l *reloader) collectors() []prometheus.Collector {
	l.ok.Set(1)
	l.reloads.WithLabelValues("applied")
	l.reloads.WithLabelValues("refused")
	return []prometheus.Collector{l.reloads, l.ok}
}

// open loads the config file, adds the apps its discover: entries select
// now, and builds the Reconciler; it notes the file's content as the one
// serve runs on.
func (l *reloader) open(ctx context.Context) (turn, error) {
	data, _ := os.ReadFile(l.f.config)
	cfg, err := l.f.load()
	if err != nil {
		return turn{}, err
	}
	var discovered []config.App
	if len(cfg.Discover) > 0 {
		dyn, err := l.dynamic()
		if err != nil {
			return turn{}, err
		}
		if discovered, err = discover.List(ctx, dyn, cfg.Discover); err != nil {
			return turn{}, err
		}
		merged, skipped := cfg.WithDiscovered(discovered)
		if len(skipped) > 0 {
			logctx.From(ctx).Info("discovered apps left out: an app of that name is listed, or was discovered first", "apps", skipped)
		}
		cfg.Config = *merged
	}
	r, err := l.f.build(cfg, l.opts)
	if err != nil {
		return turn{}, err
	}
	l.sum = sha256.Sum256(data)
	return turn{r: r, cfg: cfg, discovered: discovered}, nil
}

func (l *reloader) dynamic() (dynamic.Interface, error) {
	if l.dyn != nil {
		return l.dyn, nil
	}
	rc, err := l.f.restConfig()
	if err != nil {
		return nil, err
	}
	if l.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	return l.dyn, nil
}

// next blocks until the file holds a new valid config, or the apps that
// cur's discover: entries select change, and returns the new turn; ok is
// false when ctx ended first.
func (l *reloader) next(ctx context.Context, cur turn) (next turn, ok bool) {
	log := logctx.From(ctx)
	var changed <-chan struct{}
	if len(cur.cfg.Discover) > 0 {
		if dyn, err := l.dynamic(); err == nil {
			changed = discover.Watch(ctx, dyn, cur.cfg.Discover, cur.discovered).Changed()
		}
	}
	tick := time.NewTicker(l.every)
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
				log.Info("the apps discover: selects changed; serve restarts its loops on them at the next look")
			}
			pending = true
			continue
		case <-tick.C:
		}
		data, err := os.ReadFile(l.f.config)
		if err != nil {
			// A ConfigMap's swap, or a file being written: the next look.
			log.Debug("cannot read the config file", "file", l.f.config, "error", err.Error())
			continue
		}
		sum := sha256.Sum256(data)
		fileChanged := !bytes.Equal(sum[:], l.sum[:])
		if !fileChanged && !pending {
			continue
		}
		t, err := l.open(ctx)
		switch {
		case err != nil && fileChanged:
			l.sum = sum // refused once, not again at every look
			l.reloads.WithLabelValues("refused").Inc()
			l.ok.Set(0)
			log.Error("the config file changed, but the new config is refused; serve keeps the one it runs", "file", l.f.config, "error", err.Error())
			continue
		case err != nil:
			log.Error("cannot apply the discovered apps yet; serve keeps the ones it runs and tries again", "error", err.Error())
			continue
		}
		if fileChanged {
			l.reloads.WithLabelValues("applied").Inc()
			l.ok.Set(1)
			log.Info("the config file changed; serve restarts its loops on the new config", "file", l.f.config, "apps", len(t.cfg.Apps))
		}
		return t, true
	}
}
