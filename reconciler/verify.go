package reconciler

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// snapshotOn is what verification and health read of app's desired in
// cluster c: the live objects, and, from the watcher's caches of
// namespaces (started on first use), their Pods, ReplicaSets,
// ControllerRevisions and the Nodes.
func (r *Reconciler) snapshotOn(ctx context.Context, c *cluster.Cluster, app string, namespaces []string, desired []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) (*verdict.Snapshot, error) {
	if err := c.Pods.Watch(ctx, app, namespaces); err != nil {
		return nil, fmt.Errorf("watching the Pods of %v: %w", namespaces, err)
	}
	snap := &verdict.Snapshot{Desired: desired, Live: live, Mirrors: r.mirrors}
	c.Pods.FillOwned(snap, namespaces, ownedBy(desired, live))
	return snap, nil
}

// ownedBy names what the live objects of desired's workloads own: what a
// snapshot of them reads.
func ownedBy(desired []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) cluster.Owned {
	var o cluster.Owned
	for _, d := range desired {
		l := live[object.RefOf(d)]
		if l == nil || !verdict.IsWorkload(d) {
			continue
		}
		if d.GetKind() == "Pod" {
			o.Pods = append(o.Pods, types.NamespacedName{Namespace: l.GetNamespace(), Name: l.GetName()})
		} else {
			o.Workloads = append(o.Workloads, l.GetUID())
		}
	}
	return o
}

// verify verifies snap's workloads for app at commit, asking the registry
// what the verification needs (config digests, index children) first.
func (r *Reconciler) verify(ctx context.Context, app, commit string, snap *verdict.Snapshot) *verdict.Verification {
	start := time.Now()
	defer func() { r.metrics.ObserveProof(app, time.Since(start)) }()
	snap.Lookups = r.lookups.Answers(ctx, verdict.Needs(snap))
	return verdict.Verify(app, commit, snap)
}

// proveOn is verify for the verification that is reported, of Pods in
// cluster c: a proof it has not made before is final only once the
// workloads, read again in c after the Pods were collected, are as they
// were (confirm). When they were not, again is called: the workload
// moved during the pass (a status update as the last Pod turned Ready),
// and nothing may come to say when it stops, so the app's loop looks
// again shortly instead of at its interval.
func (r *Reconciler) proveOn(ctx context.Context, c *cluster.Cluster, app, commit string, snap *verdict.Snapshot, again func()) *verdict.Verification {
	return r.proveWith(ctx, c.Confirm, app, commit, snap, again)
}

// proveWith is proveOn with the confirm that reads the workloads again.
func (r *Reconciler) proveWith(ctx context.Context, confirm confirmFunc, app, commit string, snap *verdict.Snapshot, again func()) *verdict.Verification {
	v := r.verify(ctx, app, commit, snap)
	if !v.Verified {
		return v
	}
	key := proofOf(v)
	if prev, ok := r.confirmed.Load(app); ok && prev == key {
		return v
	}
	if reason, moved := confirm(ctx, snap); reason != "" {
		v.Verified = false
		v.Reasons = append(v.Reasons, reason)
		if moved {
			again()
		}
		return v
	}
	r.confirmed.Store(app, key)
	return v
}

// trustStoredProof takes the Verified proof app's record stores as
// confirmed, when this process has confirmed none yet for app: its
// writer stored it only once confirmed. A replica taking over thousands
// of apps, or starting, then reads again only the workloads whose proof
// changed. A stored proof cut at status.MaxPods is not taken.
func (r *Reconciler) trustStoredProof(app string, s *status.App) {
	if !s.Verified || len(s.Pods) == 0 || len(s.Pods) >= status.MaxPods {
		return
	}
	if _, ok := r.confirmed.Load(app); ok {
		return // every pass but a process's first: no key to build
	}
	r.confirmed.LoadOrStore(app, claimOf(s.Pods))
}

// proofOf is what a Verified verification claims of the cluster: which
// container of which Pod runs which digest. The commit is left out: a
// new head pinning the same digests (a commit to another app of the
// repository) claims nothing new of the workloads, so it needs no
// confirming read of them.
func proofOf(v *verdict.Verification) string {
	return claimOf(v.Containers)
}

// claimOf is proofOf of containers.
func claimOf(containers []verdict.ContainerVerdict) string {
	parts := make([]string, 0, len(containers))
	for _, c := range containers {
		parts = append(parts, c.Namespace+"/"+c.Pod+"/"+c.Container+"="+c.RunningDigest)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// confirmFunc reads a snapshot's workloads again and says why its proof
// is not final ("" when it is); moved says a workload changed (rather
// than the read failing), so a look shortly after may find it settled.
type confirmFunc func(context.Context, *verdict.Snapshot) (reason string, moved bool)
