package reconciler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// deploymentStatus is a live Deployment with the given replica counts and
// a Progressing condition.
func deploymentStatus(replicas, updated, ready, available int64, progressing string) *unstructured.Unstructured {
	return liveWorkload("apps/v1", "Deployment", "web", replicas, 2, 2, map[string]any{
		"replicas": replicas, "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": available,
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "True", "reason": progressing},
			map[string]any{"type": "Available", "status": "True"},
		},
	})
}

func TestAssessHealth(t *testing.T) {
	cm := obj("v1", "ConfigMap", "web", "settings", nil)
	deploy := gitDeployment("web", repo+"@"+digestB)
	rs := []*appsv1.ReplicaSet{replicaSet("web", "new", 1)}
	newPod := func(status string) []*corev1.Pod {
		return []*corev1.Pod{pod("web-new-1", "ReplicaSet", "web-new", nil, status)}
	}
	for _, tc := range []struct {
		name   string
		snap   *Snapshot
		health Health
		reason string
	}{
		{name: "all current", snap: &Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: liveMap(cm, deploymentStatus(2, 2, 2, 2, "NewReplicaSetAvailable"))}, health: Healthy},
		{name: "rollout stuck on readiness", snap: &Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: liveMap(cm, deploymentStatus(3, 1, 2, 2, "ReplicaSetUpdated")), ReplicaSets: rs, Pods: newPod("app=" + repo + "@" + digestB)},
			health: Progressing, reason: "Deployment web/web: "},
		{name: "image pull failure", snap: &Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: liveMap(cm, deploymentStatus(3, 1, 2, 2, "ReplicaSetUpdated")), ReplicaSets: rs, Pods: newPod("app=wait:ImagePullBackOff:Back-off pulling image \"x\"")},
			health: Degraded, reason: `Deployment web/web: pod web-new-1 container app: ImagePullBackOff: Back-off pulling image "x"`},
		{name: "missing object", snap: &Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: liveMap(deploymentStatus(2, 2, 2, 2, "NewReplicaSetAvailable"))}, health: Missing, reason: "ConfigMap web/settings: not in the cluster"},
		{name: "degraded beats missing", snap: &Snapshot{Desired: []*unstructured.Unstructured{cm, deploy},
			Live: liveMap(deploymentStatus(3, 1, 2, 2, "ProgressDeadlineExceeded"))}, health: Degraded, reason: "Deployment web/web"},
		{name: "nothing desired", snap: &Snapshot{}, health: Healthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AssessHealth(tc.snap)
			if got.Health != tc.health || !strings.HasPrefix(got.Reason, tc.reason) || (tc.reason == "" && got.Reason != "") {
				t.Errorf("AssessHealth = %s %q, want %s %q…; objects %+v", got.Health, got.Reason, tc.health, tc.reason, got.Objects)
			}
			if len(got.Objects) != len(tc.snap.Desired) {
				t.Errorf("got %d object healths, want %d", len(got.Objects), len(tc.snap.Desired))
			}
		})
	}
}

func TestCompare(t *testing.T) {
	a := obj("v1", "ConfigMap", "web", "a", map[string]any{"data": map[string]any{"k": "v1"}})
	b := obj("v1", "ConfigMap", "web", "b", nil)
	stamped := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		s, err := ssa.Stamp(u, "web")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	changed := a.DeepCopy()
	changed.Object["data"] = map[string]any{"k": "v2"}
	for _, tc := range []struct {
		name  string
		live  map[ObjectRef]*unstructured.Unstructured
		state SyncState
		out   []ObjectRef
	}{
		{"synced", liveMap(stamped(a), stamped(b)), Synced, nil},
		{"missing", liveMap(stamped(a)), OutOfSync, []ObjectRef{RefOf(b)}},
		{"git moved", liveMap(stamped(changed), stamped(b)), OutOfSync, []ObjectRef{RefOf(a)}},
		{"not applied by pinbot", liveMap(a, stamped(b)), OutOfSync, []ObjectRef{RefOf(a)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, out, err := Compare("web", []*unstructured.Unstructured{a, b}, tc.live)
			if err != nil {
				t.Fatal(err)
			}
			if state != tc.state {
				t.Errorf("state = %s, want %s", state, tc.state)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("out of sync (-want +got):\n%s", diff)
			}
		})
	}
}
