package verdict

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/object"
)

// Confirm reads snap's workloads again with read (past the caches, or
// through the Application tree Argo CD's API serves), and says how one
// changed since the snapshot read it ("" when none did): a rollout begun
// or a Pod replaced while the Pods were collected would make the proof
// describe a state that no longer holds. moved is true when a workload
// did change, false when none did or they could not be read again.
func Confirm(ctx context.Context, snap *Snapshot, read func(ctx context.Context, want, live map[object.Ref]*unstructured.Unstructured) error) (reason string, moved bool) {
	want := map[object.Ref]*unstructured.Unstructured{}
	for _, d := range snap.Desired {
		if IsWorkload(d) {
			want[object.RefOf(d)] = d
		}
	}
	again := map[object.Ref]*unstructured.Unstructured{}
	if err := read(ctx, want, again); err != nil {
		return fmt.Sprintf("not final: reading the workloads again after collecting their Pods: %s", err), false
	}
	refs := make([]object.Ref, 0, len(want))
	for ref := range want {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	for _, ref := range refs {
		before, after := snap.Live[ref], again[ref]
		switch {
		case before == nil:
		case after == nil:
			return fmt.Sprintf("not final: %s was deleted while its Pods were collected", ref), true
		case after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion():
			return fmt.Sprintf("not final: %s changed while its Pods were collected (resourceVersion %s, then %s)", ref, before.GetResourceVersion(), after.GetResourceVersion()), true
		}
	}
	return "", false
}
