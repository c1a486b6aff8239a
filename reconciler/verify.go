package reconciler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// snapshot is what verification and health read of desired: the live
// objects, and, from the watcher's caches of namespaces (started on first
// use), their Pods, ReplicaSets, ControllerRevisions and the Nodes.
func (r *Reconciler) snapshot(ctx context.Context, namespaces []string, desired []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) (*verdict.Snapshot, error) {
	if err := r.watcher.watch(ctx, namespaces); err != nil {
		return nil, fmt.Errorf("watching the Pods of %v: %w", namespaces, err)
	}
	snap := &verdict.Snapshot{Desired: desired, Live: live}
	r.watcher.fill(snap, namespaces)
	return snap, nil
}

// verify verifies snap's workloads for app at commit, asking the registry
// what the verification needs (config digests, index children) first.
func (r *Reconciler) verify(ctx context.Context, app, commit string, snap *verdict.Snapshot) *verdict.Verification {
	snap.Lookups = r.lookups.answer(ctx, verdict.Needs(snap))
	return verdict.Verify(app, commit, snap)
}
