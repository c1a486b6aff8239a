package reconciler

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// Names pinbot writes on every object it applies (see package ssa).
const (
	// LabelApp is the inventory label: the name of the app that applied the
	// object. Prune deletes only objects carrying it.
	LabelApp = ssa.LabelApp
	// AnnotationHash holds a hash of the object as rendered from Git, so a
	// pass can tell that Git moved without a dry run per object.
	AnnotationHash = ssa.AnnotationHash
	// FieldManager is the server-side apply field manager.
	FieldManager = ssa.FieldManager
)

// ObjectRef names one Kubernetes object.
type ObjectRef = ssa.ObjectRef

// ApplyError stops a sync: it names the object whose apply failed and
// carries the API server's error.
type ApplyError = ssa.ApplyError

// PruneError stops a prune: it names the object whose deletion failed and
// carries the API server's error.
type PruneError = ssa.PruneError

// RefOf returns the reference of u.
func RefOf(u *unstructured.Unstructured) ObjectRef { return ssa.RefOf(u) }

// sortRefs orders references by group, kind, namespace and name.
func sortRefs(refs []ObjectRef) {
	sort.Slice(refs, func(i, j int) bool { return refLess(refs[i], refs[j]) })
}

// refLess orders references by group, kind, namespace and name.
func refLess(a, b ObjectRef) bool {
	switch {
	case a.Group != b.Group:
		return a.Group < b.Group
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
