// Package metrics holds the reconciler's Prometheus metrics: the per-app
// gauges computed at scrape time from what each app's last pass left
// (Collector), the counters of syncs and heals, the histograms of a pass
// and a proof, and the cache of the statuses a leader stored, which a
// replica that runs no passes reports.
package metrics

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

// Metrics are the Reconciler's Prometheus metrics. The per-app gauges
// are computed at scrape time from the status each app's last pass left
// in memory, or on a follower from the status the leader stored (see
// Collector); only events are counted.
type Metrics struct {
	syncs  *prometheus.CounterVec
	heals  *prometheus.CounterVec
	passes *prometheus.HistogramVec
	proofs *prometheus.HistogramVec
	apps   Collector
}

// LastPass is what one app's last pass found.
type LastPass struct {
	Status       status.App
	Verification *verdict.Verification // nil when the pass verified nothing
}

// New returns the metrics of a Reconciler whose apps' last passes
// statuses returns, in config order.
func New(statuses func(context.Context) []LastPass) *Metrics {
	return &Metrics{
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
		apps: Collector{statuses},
	}
}

// Register registers the metrics with reg:
// pinbot_app_synced, pinbot_app_healthy and pinbot_app_verified (1 or 0
// per app, from its last pass; absent before the first),
// pinbot_app_verification{app,state} (the proof's state as a state set),
// pinbot_sync_total{app,result}, pinbot_heal_total{app}, and the
// histograms pinbot_reconcile_duration_seconds{app} and
// pinbot_verify_duration_seconds{app}.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.syncs, m.heals, m.passes, m.proofs, m.apps} {
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

// Collector turns each app's last status into gauges at scrape time.
type Collector struct {
	statuses func(context.Context) []LastPass
}

func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- healthyDesc
	ch <- verifiedDesc
	ch <- verificationDesc
}

func (c Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storedReadBudget)
	defer cancel()
	for _, p := range c.statuses(ctx) {
		s := p.Status
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, bit(s.Sync == status.Synced), s.App)
		ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, bit(s.Health == verdict.Healthy), s.App)
		ch <- prometheus.MustNewConstMetric(verifiedDesc, prometheus.GaugeValue, bit(s.Verified), s.App)
		state := StateOf(s, p.Verification)
		for _, st := range verdict.States {
			ch <- prometheus.MustNewConstMetric(verificationDesc, prometheus.GaugeValue, bit(st == state), s.App, string(st))
		}
	}
}

// StateOf is the proof's state of a status: the status is the authority
// on Verified; the verification, when this process holds it, or else the
// status's record of it, says which of the other states.
func StateOf(s status.App, v *verdict.Verification) verdict.Verdict {
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

// storedTTL is how long a stored status read for /metrics is used, and
// storedReadBudget how long one scrape may spend reading them: a follower
// with many apps reads a share of them each scrape, never all at once.
const (
	storedTTL        = 30 * time.Second
	storedReadBudget = 5 * time.Second
)

// Stored caches the statuses the leader stored, for the metrics
// of a replica that runs no passes.
type Stored struct {
	mu    sync.Mutex
	byApp map[string]storedStatus
}

type storedStatus struct {
	status *status.App
	read   time.Time
}

// Get returns app's stored status, read again when older than storedTTL
// and ctx leaves time for it; nil when none was ever read.
func (c *Stored) Get(ctx context.Context, h *record.History, app string) *status.App {
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

// CountSync counts a sync of app with result; nil-safe for Reconcilers
// built in tests without New.
func (m *Metrics) CountSync(app string, result history.Result) {
	if m != nil {
		m.syncs.WithLabelValues(app, string(result)).Inc()
	}
}

// CountHeal counts a self-heal of app.
func (m *Metrics) CountHeal(app string) {
	if m != nil {
		m.heals.WithLabelValues(app).Inc()
	}
}

// ObservePass records how long one pass of app took.
func (m *Metrics) ObservePass(app string, d time.Duration) {
	if m != nil {
		m.passes.WithLabelValues(app).Observe(d.Seconds())
	}
}

// ObserveProof records how long verifying app's Pods took.
func (m *Metrics) ObserveProof(app string, d time.Duration) {
	if m != nil {
		m.proofs.WithLabelValues(app).Observe(d.Seconds())
	}
}
