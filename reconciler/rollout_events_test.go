package reconciler_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/status"
)

// TestRolloutsRaiseNoWarning: ten rollouts, each proven by the loop,
// write no Warning Event. While a rollout runs, the old revision's Pods
// are not the current revision's, and before the controller has observed
// the new template no Pod is: each is Pending, not a Mismatch, so a team
// forwarding Warning Events to chat is not paged on every deploy. A node
// that kept a stale image still warns.
func TestRolloutsRaiseNoWarning(t *testing.T) {
	s := newScenario(t, "rollouts", "{automated: true}")
	s.runLoop()
	for i := range 10 {
		img := pushImage(t, "rollouts-app", fmt.Sprintf("v%d", i+1))
		sha := s.push(map[string]string{"app/deploy.yaml": deployment(2, img.ref())}, fmt.Sprintf("Release %d", i+1))
		if err := s.r.Trigger(s.name); err != nil {
			t.Fatal(err)
		}
		s.waitStoredStatus(fmt.Sprintf("release %d proven", i+1), func(st *status.App) bool { return st.Verified && st.Commit == sha })
	}
	evs, err := env.kube.CoreV1().Events(s.name).List(testCtx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Source.Component == "pinbot" {
			t.Errorf("a Warning Event during the rollouts: %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}

	old, cur := pushImage(t, "rollouts-app", "v1"), pushImage(t, "rollouts-app", "stale")
	if err := env.node.StaleImage(cur.repo, old.digest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.node.StaleImage(cur.repo, "") })
	s.push(map[string]string{"app/deploy.yaml": deployment(2, cur.ref())}, "A release a node runs stale")
	if err := s.r.Trigger(s.name); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, s.name, "Deployment", "web", "Mismatch")
}
