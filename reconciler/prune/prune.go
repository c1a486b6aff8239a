// Package prune decides what a sync does with an app's orphans: the
// objects of its inventory that Git no longer declares. It deletes what
// pinbot applied and may write, and keeps what a person must decide about
// (Namespaces, CRDs, objects annotated to stay). Pure.
package prune

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/wave"
)

// Annotation set to "false" on an object keeps prune from deleting it once
// Git no longer declares it.
const Annotation = "pinbot.dev/prune"

// Kept is an orphan that prune leaves alone, and why.
type Kept struct {
	Object object.Ref `json:"object"`
	Reason string     `json:"reason"`
}

// Orphans is what prune does with an app's orphans: the objects of its
// inventory that the render no longer declares.
type Orphans struct {
	// Delete are the orphans prune deletes, highest sync wave first (the
	// reverse of the apply order), then by kind, namespace and name.
	Delete []object.Ref `json:"delete,omitempty"`
	// Keep are the orphans prune leaves alone, with the reason, by kind,
	// namespace and name.
	Keep []Kept `json:"keep,omitempty"`
}

// All returns every orphan, to delete or kept, by kind, namespace and
// name.
func (p Orphans) All() []object.Ref {
	out := append([]object.Ref(nil), p.Delete...)
	for _, k := range p.Keep {
		out = append(out, k.Object)
	}
	object.Sort(out)
	return out
}

// Reasons an orphan is kept.
const (
	keepAnnotated = `annotation ` + Annotation + `: "false"`
	keepArgo      = `annotation ` + hook.AnnotationArgoSyncOptions + `: Prune=false`
	keepDeleting  = "already being deleted"
	keepNamespace = "a Namespace is never pruned: deleting it would delete everything in it"
	keepCRD       = "a CustomResourceDefinition is never pruned: deleting it would delete every object of its kind"
	keepCluster   = "cluster-scoped kind not in allowClusterScoped"
)

// Plan decides which objects of inventory (live objects carrying
// app's inventory label) prune deletes, given desired (the placed render
// of the commit being synced).
//
// An inventory object is an orphan when desired does not declare it,
// pinbot applied it (its managed fields name field manager "pinbot" with
// operation Apply: controllers copy labels, as the endpoints controller
// copies a Service's onto its Endpoints), and no controller owns it (its
// owner's deletion cascades to it). An orphan is kept when
//   - it is annotated pinbot.dev/prune: "false", or carries Argo CD's
//     argocd.argoproj.io/sync-options: Prune=false;
//   - it is already being deleted;
//   - its namespace is not in app's allowNamespaces, or it is of a
//     cluster-scoped kind outside allowClusterScoped: an app never deletes
//     what it may not write;
//   - it is a Namespace or a CustomResourceDefinition: deleting either
//     deletes objects Git never listed (everything in the namespace,
//     every object of the kind), so a person does it.
//
// Every other orphan is deleted. When desired is empty and the app does
// not allow an empty render, a plan that would delete anything is refused
// with an error wrapping guard.ErrEmpty: a wrong path or a bad rebase must not
// delete everything.
func Plan(app *config.App, desired, inventory []*unstructured.Unstructured) (Orphans, error) {
	declared := map[object.Ref]bool{}
	for _, d := range desired {
		declared[object.RefOf(d)] = true
	}
	allowNS := guard.Namespaces(app)
	var plan Orphans
	waves := map[object.Ref]int{}
	seen := map[object.Ref]bool{}
	for _, o := range inventory {
		ref := object.RefOf(o)
		if declared[ref] || seen[ref] || o.GetLabels()[object.LabelApp] != app.Name || !object.AppliedByPinbot(o) || object.Controlled(o) {
			continue
		}
		seen[ref] = true
		reason := ""
		switch {
		case o.GetAnnotations()[Annotation] == "false":
			reason = keepAnnotated
		case hook.NoPrune(o):
			reason = keepArgo
		case o.GetDeletionTimestamp() != nil:
			reason = keepDeleting
		case o.GetNamespace() != "" && !allowNS[o.GetNamespace()]:
			reason = fmt.Sprintf("namespace %q is not in allowNamespaces %v", o.GetNamespace(), app.AllowNamespaces)
		case object.IsNamespace(o):
			reason = keepNamespace
		case object.IsCRD(o):
			reason = keepCRD
		case o.GetNamespace() == "" && !guard.ClusterScopedAllowed(app, o):
			reason = keepCluster
		}
		if reason != "" {
			plan.Keep = append(plan.Keep, Kept{Object: ref, Reason: reason})
			continue
		}
		waves[ref], _ = wave.Of(o) // a bad annotation on an orphan orders it as wave 0
		plan.Delete = append(plan.Delete, ref)
	}
	object.Sort(plan.Delete)
	sort.SliceStable(plan.Delete, func(i, j int) bool { return waves[plan.Delete[i]] > waves[plan.Delete[j]] })
	sort.Slice(plan.Keep, func(i, j int) bool { return object.Less(plan.Keep[i].Object, plan.Keep[j].Object) })
	if len(desired) == 0 && !app.SyncPolicy.AllowEmpty && len(plan.Delete) > 0 {
		n := fmt.Sprintf("%d objects", len(plan.Delete))
		if len(plan.Delete) == 1 {
			n = "1 object"
		}
		return Orphans{}, fmt.Errorf("refusing to delete %s of the app: %w", n, guard.ErrEmpty)
	}
	return plan, nil
}
