package reconciler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/status"
)

// TestEventsAndDurations: once the loop proves a sync, the Deployment it
// verified carries a Verified Event (kubectl describe shows it), and the
// pass and verification histograms have observations.
func TestEventsAndDurations(t *testing.T) {
	s := newScenario(t, "events", "{automated: true}")
	reg := prometheus.NewRegistry()
	if err := s.r.Register(reg); err != nil {
		t.Fatal(err)
	}
	img := pushImage(t, "events-app", "v1")
	sha := s.push(map[string]string{"app/deploy.yaml": deployment(1, img.ref())}, "Initial")
	s.runLoop()
	s.waitStoredStatus("verified", func(st *status.App) bool { return st.Verified && st.Commit == sha })

	poll.Until(t, 30*time.Second, "a Verified Event on the Deployment", func() (bool, string) {
		evs, err := env.kube.CoreV1().Events("events").List(testCtx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=web"})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, e.Reason+": "+e.Message)
			if e.Reason == "Verified" && e.Source.Component == "pinbot" && e.Type == "Normal" && strings.Contains(e.Message, sha[:7]) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events: %q", got)
	})
	// The app's own object, the ConfigMap of its record, carries it too.
	waitEvents(t, s.r.Config().StateNamespace, "ConfigMap", "pinbot-app-"+s.name, "Verified")
	for _, name := range []string{"pinbot_reconcile_duration_seconds", "pinbot_verify_duration_seconds"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
			t.Errorf("%s: %d series, %v", name, n, err)
		}
	}
}
