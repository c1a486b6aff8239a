package reconciler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// SyncState answers "does the cluster hold what Git declares?".
type SyncState string

// Sync states.
const (
	Synced    SyncState = "Synced"
	OutOfSync SyncState = "OutOfSync"
	// SyncUnknown: the comparison could not be made (source unreachable,
	// render failed, cluster unreachable).
	SyncUnknown SyncState = "Unknown"
)

// Compare reports whether every desired (placed) object is in the cluster
// as pinbot last applied it from the same rendered content: present,
// labelled for app, and carrying the same AnnotationHash. It lists the
// objects that are not. Pure.
//
// Hooks (see HookOf) are left out: a sync runs them, once per rendered
// content, and between syncs the cluster may hold them completed, deleted
// by their own TTL, or not at all.
//
// This catches every change Git makes. Changes made on the cluster to
// fields Git owns are drift, which DriftOf detects from a server-side
// apply dry run (see Reconciler.Diff); Compare deliberately does not read
// live field values.
func Compare(app string, desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) (SyncState, []ObjectRef, error) {
	var out []ObjectRef
	for _, d := range desired {
		if isHook(d) {
			continue
		}
		ref := RefOf(d)
		l := live[ref]
		if l == nil {
			out = append(out, ref)
			continue
		}
		h, err := ssa.ConfigHash(d)
		if err != nil {
			return SyncUnknown, nil, err
		}
		if l.GetAnnotations()[AnnotationHash] != h || l.GetLabels()[LabelApp] != app {
			out = append(out, ref)
		}
	}
	if len(out) > 0 {
		return OutOfSync, out, nil
	}
	return Synced, nil, nil
}
