package reconciler

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

func TestMetricsStatusGauges(t *testing.T) {
	r := newOfflineReconciler(t,
		config.App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"},
		config.App{Name: "api", Repo: "http://gitea:3000/org/api.git", Branch: "main"},
		config.App{Name: "fresh", Repo: "http://gitea:3000/org/fresh.git", Branch: "main"},
	)
	r.states()["web"].remember(&status.App{App: "web", Sync: status.Synced, Health: verdict.Healthy, Verified: true}, nil)
	r.states()["api"].remember(&status.App{App: "api", Sync: status.OutOfSync, Health: verdict.Degraded},
		&verdict.Verification{Containers: []verdict.ContainerVerdict{{Verdict: verdict.Verified}, {Verdict: verdict.Inconclusive}, {Verdict: verdict.Pending}}})
	r.states()["api"].remember(nil, nil) // a pass without a status keeps the last one
	r.metrics.CountSync("web", history.Applied)
	r.metrics.CountSync("web", history.Applied)
	r.metrics.CountSync("api", history.Refused)
	r.metrics.CountHeal("web")

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
# HELP pinbot_app_verification The state of the app's proof, one series per state, 1 for the current one: Verified, Mismatch, Inconclusive (the registry could not prove an index/platform relation), Unknown or Pending.
# TYPE pinbot_app_verification gauge
pinbot_app_verification{app="api",state="Inconclusive"} 1
pinbot_app_verification{app="api",state="Mismatch"} 0
pinbot_app_verification{app="api",state="Pending"} 0
pinbot_app_verification{app="api",state="Unknown"} 0
pinbot_app_verification{app="api",state="Verified"} 0
pinbot_app_verification{app="web",state="Inconclusive"} 0
pinbot_app_verification{app="web",state="Mismatch"} 0
pinbot_app_verification{app="web",state="Pending"} 0
pinbot_app_verification{app="web",state="Unknown"} 0
pinbot_app_verification{app="web",state="Verified"} 1
# HELP pinbot_heal_total Self-heals of objects out of sync, by app.
# TYPE pinbot_heal_total counter
pinbot_heal_total{app="web"} 1
# HELP pinbot_sync_total Syncs by app and result (Applied, Failed, Refused).
# TYPE pinbot_sync_total counter
pinbot_sync_total{app="api",result="Refused"} 1
pinbot_sync_total{app="web",result="Applied"} 2
`
	reg := prometheus.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"pinbot_app_synced", "pinbot_app_healthy", "pinbot_app_verified", "pinbot_app_verification", "pinbot_sync_total", "pinbot_heal_total"); err != nil {
		t.Error(err)
	}

	// The gauges follow the latest status, with no bookkeeping.
	r.states()["api"].remember(&status.App{App: "api", Sync: status.Synced, Health: verdict.Healthy, Verified: true}, nil)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pinbot_app_verified 1 if every current Pod of the app runs the digests Git pins, else 0.
# TYPE pinbot_app_verified gauge
pinbot_app_verified{app="api"} 1
pinbot_app_verified{app="web"} 1
`), "pinbot_app_verified"); err != nil {
		t.Error(err)
	}
}

// newOfflineReconciler is a Reconciler of apps on a cluster that is never
// reached.
func newOfflineReconciler(t *testing.T, apps ...config.App) *Reconciler {
	t.Helper()
	r, err := New(&config.Config{Apps: apps}, &rest.Config{Host: "http://127.0.0.1:1"}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}
