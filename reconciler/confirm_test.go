package reconciler

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/lookup"
	"pinbot.dev/pinbot/reconciler/metrics"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestUnconfirmedProofLooksAgain: a proof whose workload moved while its
// Pods were collected is not final, and the app's loop is asked to look
// again (its last Pod event may have come before the move, and nothing
// else would come until the interval); a confirmed proof asks nothing.
func TestUnconfirmedProofLooksAgain(t *testing.T) {
	r := &Reconciler{lookups: lookup.New(nil)}
	r.metrics = metrics.New(r.statuses)
	snap := &verdict.Snapshot{
		Desired:     []*unstructured.Unstructured{fixture.GitDeployment("web", fixture.Repo+"@"+fixture.DigestB)},
		Live:        map[object.Ref]*unstructured.Unstructured{},
		Nodes:       []*corev1.Node{fixture.Node("n1", fixture.AMD64)},
		ReplicaSets: []*appsv1.ReplicaSet{fixture.ReplicaSet("web", "new", 2)},
		Pods:        []*corev1.Pod{fixture.Pod("web-new-0", "ReplicaSet", "web-new", nil, "app="+fixture.Repo+"@"+fixture.DigestB)},
	}
	live := fixture.LiveWorkload("apps/v1", "Deployment", "web", 1, 1, 1, nil)
	snap.Live[object.RefOf(live)] = live
	if v := r.verify(context.Background(), "web", "c1", snap); !v.Verified {
		t.Fatalf("the fixture does not verify: %q", v.Reasons)
	}

	looked := 0
	again := func() { looked++ }
	moved := func(context.Context, *verdict.Snapshot) (string, bool) {
		return "not final: Deployment default/web changed while its Pods were collected (resourceVersion 1, then 2)", true
	}
	unread := func(context.Context, *verdict.Snapshot) (string, bool) {
		return "not final: reading the workloads again after collecting their Pods: connection refused", false
	}
	if v := r.proveWith(context.Background(), unread, "web", "c1", snap, again); v.Verified || looked != 0 {
		t.Errorf("workload unread: verified %v, looked again %d times; want not final, and no look (an API that fails would spin the loop)", v.Verified, looked)
	}
	if v := r.proveWith(context.Background(), moved, "web", "c1", snap, again); v.Verified || looked != 1 {
		t.Errorf("workload moved: verified %v, looked again %d times; want not final, once", v.Verified, looked)
	}
	held := func(context.Context, *verdict.Snapshot) (string, bool) { return "", false }
	if v := r.proveWith(context.Background(), held, "web", "c1", snap, again); !v.Verified || looked != 1 {
		t.Errorf("workload held: verified %v, looked again %d times; want verified, no new look", v.Verified, looked)
	}
}
