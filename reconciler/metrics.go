package reconciler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// metrics are the Reconciler's Prometheus metrics. The per-app gauges are
// computed at scrape time from the status each app's last pass left in
// memory, or on a follower from the status the leader stored (see
// statusCollector); only events are counted.
type metrics struct {
	syncs  *prometheus.CounterVec
	heals  *prometheus.CounterVec
	passes *prometheus.HistogramVec
	proofs *prometheus.HistogramVec
	apps   statusCollector
}

func newMetrics(r *Reconciler) *metrics {
	return &metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_sync_total",
			Help: "Syncs by app and result (Applied, Failed, Refused).",
		}, []string{"app", "result"}),
		heals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_heal_total",
			Help: "Self-heals of objects out of sync, by app.",
		}, []string{"app"}),
		passes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pinbot_reconcile_duration_seconds",
			Help:    "How long one pass of an app took: fetch, render, compare, apply when it applies, verify.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"app"}),
		proofs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pinbot_verify_duration_seconds",
			Help:    "How long verifying an app's Pods against Git took, the registry's answers included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10),
		}, []string{"app"}),
		apps: statusCollector{r},
	}
}

// Register registers the Reconciler's metrics with reg:
// pinbot_app_synced, pinbot_app_healthy and pinbot_app_verified (1 or 0
// per app, from its last pass; absent before the first),
// pinbot_app_verification{app,state} (the proof's state as a state set),
// pinbot_sync_total{app,result}, pinbot_heal_total{app}, and the
// histograms pinbot_reconcile_duration_seconds{app} and
// pinbot_verify_duration_seconds{app}.
func (r *Reconciler) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{r.metrics.syncs, r.metrics.heals, r.metrics.passes, r.metrics.proofs, r.metrics.apps} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the reconciler's metrics: %w", err)
		}
	}
	return nil
}

var (
	syncedDesc = prometheus.NewDesc("pinbot_app_synced",
		"1 if the cluster holds what the app's branch head declares, else 0.", []string{"app"}, nil)
	healthyDesc = prometheus.NewDesc("pinbot_app_healthy",
		"1 if the app's objects are Healthy, else 0.", []string{"app"}, nil)
	verifiedDesc = prometheus.NewDesc("pinbot_app_verified",
		"1 if every current Pod of the app runs the digests Git pins, else 0.", []string{"app"}, nil)
	verificationDesc = prometheus.NewDesc("pinbot_app_verification",
		"The state of the app's proof, one series per state, 1 for the current one: Verified, Mismatch, Inconclusive (the registry could not prove an index/platform relation), Unknown or Pending.",
		[]string{"app", "state"}, nil)
)

// statusCollector turns each app's last status into gauges at scrape time.
type statusCollector struct{ r *Reconciler }

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- healthyDesc
	ch <- verifiedDesc
	ch <- verificationDesc
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storedReadBudget)
	defer cancel()
	for _, p := range c.r.statuses(ctx) {
		s := p.status
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, bit(s.Sync == status.Synced), s.App)
		ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, bit(s.Health == verdict.Healthy), s.App)
		ch <- prometheus.MustNewConstMetric(verifiedDesc, prometheus.GaugeValue, bit(s.Verified), s.App)
		state := stateOf(s, p.verification)
		for _, st := range verdict.States {
			ch <- prometheus.MustNewConstMetric(verificationDesc, prometheus.GaugeValue, bit(st == state), s.App, string(st))
		}
	}
}

// stateOf is the proof's state of a status: the status is the authority
// on Verified; the verification, when this process holds it, or else the
// status's record of it, says which of the other states.
func stateOf(s status.App, v *verdict.Verification) verdict.Verdict {
	if s.Verified {
		return verdict.Verified
	}
	state := s.Proof
	if v != nil {
		state = verdict.StateOf(v)
	}
	if state == "" || state == verdict.Verified {
		return verdict.Pending
	}
	return state
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// lastPass is what one app's last pass found.
type lastPass struct {
	status       status.App
	verification *verdict.Verification // nil when the pass verified nothing
}

// statuses returns each app's status, in config order: its last pass in
// this process, else (on a follower, which runs no passes) the status the
// leader stored, read at most every storedTTL; apps with neither are left
// out. With shards, each replica returns only the apps it passed, so
// that each app has one source.
func (r *Reconciler) statuses(ctx context.Context) []lastPass {
	var out []lastPass
	set := r.set.Load()
	for i := range set.cfg.Apps {
		name := set.cfg.Apps[i].Name
		if s, v := set.states[name].lastPass(); s != nil {
			out = append(out, lastPass{status: *s, verification: v})
			continue
		}
		if r.replica != "" {
			// Sharded: the replica holding the app's shard reports it.
			// Reading the others' stored statuses would cost a GET per
			// app and scrape, thousands of them.
			continue
		}
		if s := r.stored.get(ctx, r.history, name); s != nil {
			out = append(out, lastPass{status: *s})
		}
	}
	return out
}

// storedTTL is how long a stored status read for /metrics is used, and
// storedReadBudget how long one scrape may spend reading them: a follower
// with many apps reads a share of them each scrape, never all at once.
const (
	storedTTL        = 30 * time.Second
	storedReadBudget = 5 * time.Second
)

// storedStatuses caches the statuses the leader stored, for the metrics
// of a replica that runs no passes.
type storedStatuses struct {
	mu    sync.Mutex
	byApp map[string]storedStatus
}

type storedStatus struct {
	status *status.App
	read   time.Time
}

// get returns app's stored status, read again when older than storedTTL
// and ctx leaves time for it; nil when none was ever read.
func (c *storedStatuses) get(ctx context.Context, h *record.History, app string) *status.App {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byApp == nil {
		c.byApp = map[string]storedStatus{}
	}
	e := c.byApp[app]
	if time.Since(e.read) < storedTTL || ctx.Err() != nil || h == nil {
		return e.status
	}
	rec, err := h.Get(ctx, app)
	if err != nil {
		return e.status
	}
	c.byApp[app] = storedStatus{status: rec.Status, read: time.Now()}
	return rec.Status
}

// countSync counts a sync of app with result; nil-safe for Reconcilers
// built in tests without New.
func (m *metrics) countSync(app string, result history.Result) {
	if m != nil {
		m.syncs.WithLabelValues(app, string(result)).Inc()
	}
}

// countHeal counts a self-heal of app.
func (m *metrics) countHeal(app string) {
	if m != nil {
		m.heals.WithLabelValues(app).Inc()
	}
}
