package reconciler

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

func TestMetricsStatusGauges(t *testing.T) {
	r := newOfflineReconciler(t,
		App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"},
		App{Name: "api", Repo: "http://gitea:3000/org/api.git", Branch: "main"},
		App{Name: "fresh", Repo: "http://gitea:3000/org/fresh.git", Branch: "main"},
	)
	r.apps["web"].remember(&AppStatus{App: "web", Sync: Synced, Health: Healthy, Verified: true}, nil)
	r.apps["api"].remember(&AppStatus{App: "api", Sync: OutOfSync, Health: Degraded}, nil)
	r.apps["api"].remember(nil, nil) // a pass without a status keeps the last one
	r.metrics.countSync("web", Applied)
	r.metrics.countSync("web", Applied)
	r.metrics.countSync("api", Refused)
	r.metrics.countHeal("web")

	want := `
# HELP pinbot_app_healthy 1 if the app's objects are Healthy, else 0.
# TYPE pinbot_app_healthy gauge
pinbot_app_healthy{app="api"} 0
pinbot_app_healthy{app="web"} 1
# HELP pinbot_app_synced 1 if the cluster holds what the app's branch head declares, else 0.
# TYPE pinbot_app_synced gauge
pinbot_app_synced{app="api"} 0
pinbot_app_synced{app="web"} 1
# HELP pinbot_app_verified 1 if every current Pod of the app runs the digests Git pins, else 0.
# TYPE pinbot_app_verified gauge
pinbot_app_verified{app="api"} 0
pinbot_app_verified{app="web"} 1
# HELP pinbot_heal_total Self-heals of drifted objects by app.
# TYPE pinbot_heal_total counter
pinbot_heal_total{app="web"} 1
# HELP pinbot_sync_total Syncs by app and result (Applied, Failed, Refused).
# TYPE pinbot_sync_total counter
pinbot_sync_total{app="api",result="Refused"} 1
pinbot_sync_total{app="web",result="Applied"} 2
`
	if err := testutil.GatherAndCompare(r.metrics.registry, strings.NewReader(want),
		"pinbot_app_synced", "pinbot_app_healthy", "pinbot_app_verified", "pinbot_sync_total", "pinbot_heal_total"); err != nil {
		t.Error(err)
	}

	// The gauges follow the latest status, with no bookkeeping.
	r.apps["api"].remember(&AppStatus{App: "api", Sync: Synced, Health: Healthy, Verified: true}, nil)
	if err := testutil.CollectAndCompare(statusCollector{r}, strings.NewReader(`
# HELP pinbot_app_verified 1 if every current Pod of the app runs the digests Git pins, else 0.
# TYPE pinbot_app_verified gauge
pinbot_app_verified{app="api"} 1
pinbot_app_verified{app="web"} 1
`), "pinbot_app_verified"); err != nil {
		t.Error(err)
	}
}

func TestMetricsHandler(t *testing.T) {
	r := newOfflineReconciler(t, App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"})
	r.apps["web"].remember(&AppStatus{App: "web", Sync: Synced, Health: Healthy}, nil)
	r.metrics.countWebhook(webhookTriggered)
	rec := httptest.NewRecorder()
	r.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	for _, line := range []string{
		`pinbot_app_synced{app="web"} 1`,
		`pinbot_app_verified{app="web"} 0`,
		`pinbot_webhook_requests_total{result="triggered"} 1`,
	} {
		if !strings.Contains(string(b), line) {
			t.Errorf("/metrics lacks %q:\n%s", line, b)
		}
	}
}
