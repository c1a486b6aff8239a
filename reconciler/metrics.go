package reconciler

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Webhook request results, the result label of
// pinbot_webhook_requests_total.
const (
	webhookTriggered        = "triggered"
	webhookIgnored          = "ignored"
	webhookUnauthorized     = "unauthorized"
	webhookBadRequest       = "bad_request"
	webhookMethodNotAllowed = "method_not_allowed"
	webhookTooLarge         = "too_large"
)

// metrics are the Reconciler's Prometheus metrics, on a registry of their
// own. The per-app gauges are computed at scrape time from the status each
// app's last pass left in memory (see statusCollector); only events are
// counted.
type metrics struct {
	registry *prometheus.Registry
	syncs    *prometheus.CounterVec
	heals    *prometheus.CounterVec
	webhooks *prometheus.CounterVec
}

func newMetrics(r *Reconciler) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_sync_total",
			Help: "Syncs by app and result (Applied, Failed, Refused).",
		}, []string{"app", "result"}),
		heals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_heal_total",
			Help: "Self-heals of drifted objects by app.",
		}, []string{"app"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_webhook_requests_total",
			Help: "Webhook requests by result.",
		}, []string{"result"}),
	}
	m.registry.MustRegister(m.syncs, m.heals, m.webhooks, statusCollector{r})
	return m
}

// Metrics serves the Reconciler's metrics in the Prometheus exposition
// format: pinbot_app_synced, pinbot_app_healthy and pinbot_app_verified
// (1 or 0 per app, from its last pass; absent before the first),
// pinbot_sync_total{app,result}, pinbot_heal_total{app} and
// pinbot_webhook_requests_total{result}.
func (r *Reconciler) Metrics() http.Handler {
	return promhttp.HandlerFor(r.metrics.registry, promhttp.HandlerOpts{})
}

var (
	syncedDesc = prometheus.NewDesc("pinbot_app_synced",
		"1 if the cluster holds what the app's branch head declares, else 0.", []string{"app"}, nil)
	healthyDesc = prometheus.NewDesc("pinbot_app_healthy",
		"1 if the app's objects are Healthy, else 0.", []string{"app"}, nil)
	verifiedDesc = prometheus.NewDesc("pinbot_app_verified",
		"1 if every current Pod of the app runs the digests Git pins, else 0.", []string{"app"}, nil)
)

// statusCollector turns each app's last status into gauges at scrape time.
type statusCollector struct{ r *Reconciler }

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- healthyDesc
	ch <- verifiedDesc
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.r.lastStatuses() {
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, bit(s.Sync == Synced), s.App)
		ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, bit(s.Health == Healthy), s.App)
		ch <- prometheus.MustNewConstMetric(verifiedDesc, prometheus.GaugeValue, bit(s.Verified), s.App)
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// lastStatuses returns the status of each app's last pass, in config
// order, leaving out the apps without a pass yet.
func (r *Reconciler) lastStatuses() []AppStatus {
	var out []AppStatus
	for i := range r.cfg.Apps {
		st := r.apps[r.cfg.Apps[i].Name]
		st.mu.Lock()
		if st.last != nil {
			out = append(out, *st.last)
		}
		st.mu.Unlock()
	}
	return out
}

// remember keeps s as app's last status, for the metrics, and v, when
// the pass verified, as its last verification.
func (st *appState) remember(s *AppStatus, v *Verification) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s != nil {
		st.last = s
	}
	if v != nil {
		st.lastV = v
	}
}

// countSync counts a sync of app with result; nil-safe for Reconcilers
// built in tests without New.
func (m *metrics) countSync(app string, result Result) {
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

// countWebhook counts a webhook request with result.
func (m *metrics) countWebhook(result string) {
	if m != nil {
		m.webhooks.WithLabelValues(result).Inc()
	}
}
