package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/serve"
)

// DefaultReloadInterval is how often serve looks at its config file. A
// mounted ConfigMap changes by an atomic swap of a symlink, which file
// events follow badly; a read of a small file every few seconds is
// cheap and always right.
const DefaultReloadInterval = 5 * time.Second

// reloader watches serve's config file. A change is validated and opened
// (a Reconciler built on it) before serve stops the old one; a config that
// fails either is logged with its reason and counted, and serve keeps
// running on the one it has.
type reloader struct {
	f     *reconcilerFlags
	every time.Duration
	sum   [sha256.Size]byte // of the file serve runs on, or last refused

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

// running notes the file serve now runs on: data, as it was read.
func (l *reloader) running(data []byte) { l.sum = sha256.Sum256(data) }

// next blocks until the file holds a new valid config, and returns it
// with its Reconciler; ok is false when ctx ended first.
func (l *reloader) next(ctx context.Context) (r *reconciler.Reconciler, cfg *serve.Config, ok bool) {
	log := logctx.From(ctx)
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil, false
		case <-tick.C:
		}
		data, err := os.ReadFile(l.f.config)
		if err != nil {
			// A ConfigMap's swap, or a file being written: the next look.
			log.Debug("cannot read the config file", "file", l.f.config, "error", err.Error())
			continue
		}
		sum := sha256.Sum256(data)
		if bytes.Equal(sum[:], l.sum[:]) {
			continue
		}
		l.sum = sum
		r, cfg, err := l.f.open()
		if err != nil {
			l.reloads.WithLabelValues("refused").Inc()
			l.ok.Set(0)
			log.Error("the config file changed, but the new config is refused; serve keeps the one it runs", "file", l.f.config, "error", err.Error())
			continue
		}
		l.reloads.WithLabelValues("applied").Inc()
		l.ok.Set(1)
		log.Info("the config file changed; serve restarts its loops on the new config", "file", l.f.config, "apps", len(cfg.Apps))
		return r, cfg, true
	}
}
