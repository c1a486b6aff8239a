package verdict_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// deploymentStatus is a live Deployment with the given replica counts and
// a Progressing condition.
func deploymentStatus(replicas, updated, ready, available int64, progressing string) *unstructured.Unstructured {
	return fixture.LiveWorkload("apps/v1", "Deployment", "web", replicas, 2, 2, map[string]any{
		"replicas": replicas, "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": available,
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "True", "reason": progressing},
			map[string]any{"type": "Available", "status": "True"},
		},
	})
}

func TestAssessHealth(t *testing.T) {
	cm := fixture.Obj("v1", "ConfigMap", "web", "settings", nil)
	deploy := fixture.GitDeployment("web", fixture.Repo+"@"+fixture.DigestB)
	rs := []*appsv1.ReplicaSet{fixture.ReplicaSet("web", "new", 1)}
	newPod := func(status string) []*corev1.Pod {
		return []*corev1.Pod{fixture.Pod("web-new-1", "ReplicaSet", "web-new", nil, status)}
	}
	for _, tc := range []struct {
		name   string
		snap   *verdict.Snapshot
		health verdict.Health
		reason string
	}{
		{name: "all current", snap: &verdict.Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: fixture.LiveMap(cm, deploymentStatus(2, 2, 2, 2, "NewReplicaSetAvailable"))}, health: verdict.Healthy},
		{name: "rollout stuck on readiness", snap: &verdict.Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: fixture.LiveMap(cm, deploymentStatus(3, 1, 2, 2, "ReplicaSetUpdated")), ReplicaSets: rs, Pods: newPod("app=" + fixture.Repo + "@" + fixture.DigestB)},
			health: verdict.Progressing, reason: "Deployment web/web: "},
		{name: "image pull failure", snap: &verdict.Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: fixture.LiveMap(cm, deploymentStatus(3, 1, 2, 2, "ReplicaSetUpdated")), ReplicaSets: rs, Pods: newPod("app=wait:ImagePullBackOff:Back-off pulling image \"x\"")},
			health: verdict.Degraded, reason: `Deployment web/web: pod web-new-1 container app: ImagePullBackOff: Back-off pulling image "x"`},
		{name: "missing object", snap: &verdict.Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: fixture.LiveMap(deploymentStatus(2, 2, 2, 2, "NewReplicaSetAvailable"))}, health: verdict.Missing, reason: "ConfigMap web/settings: not in the cluster"},
		{name: "degraded beats missing", snap: &verdict.Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: fixture.LiveMap(deploymentStatus(3, 1, 2, 2, "ProgressDeadlineExceeded"))}, health: verdict.Degraded, reason: "Deployment web/web"},
		{name: "nothing desired", snap: &verdict.Snapshot{}, health: verdict.Healthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verdict.AssessHealth(tc.snap)
			if got.Health != tc.health || !strings.HasPrefix(got.Reason, tc.reason) || (tc.reason == "" && got.Reason != "") {
				t.Errorf("AssessHealth = %s %q, want %s %q…; objects %+v", got.Health, got.Reason, tc.health, tc.reason, got.Objects)
			}
			if len(got.Objects) != len(tc.snap.Desired) {
				t.Errorf("got %d object healths, want %d", len(got.Objects), len(tc.snap.Desired))
			}
		})
	}
}
