package reconciler

import (
	"errors"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// AnnotationPrune set to "false" on an object keeps prune from deleting
// it once Git no longer declares it.
const AnnotationPrune = "pinbot.dev/prune"

// KeptObject is an orphan that prune leaves alone, and why.
type KeptObject struct {
	Object ObjectRef `json:"object"`
	Reason string    `json:"reason"`
}

// PrunePlan is what prune does with an app's orphans: the objects of its
// inventory that the render no longer declares.
type PrunePlan struct {
	// Delete are the orphans prune deletes, highest sync wave first (the
	// reverse of the apply order), then by kind, namespace and name.
	Delete []ObjectRef `json:"delete,omitempty"`
	// Keep are the orphans prune leaves alone, with the reason, by kind,
	// namespace and name.
	Keep []KeptObject `json:"keep,omitempty"`
}

// Orphans returns every orphan, to delete or kept, by kind, namespace
// and name.
func (p PrunePlan) Orphans() []ObjectRef {
	out := append([]ObjectRef(nil), p.Delete...)
	for _, k := range p.Keep {
		out = append(out, k.Object)
	}
	sortRefs(out)
	return out
}

// Reasons an orphan is kept.
const (
	keepAnnotated = `annotation ` + AnnotationPrune + `: "false"`
	keepArgo      = `annotation ` + AnnotationArgoSyncOptions + `: Prune=false`
	keepDeleting  = "already being deleted"
	keepNamespace = "a Namespace is never pruned: deleting it would delete everything in it"
	keepCRD       = "a CustomResourceDefinition is never pruned: deleting it would delete every object of its kind"
	keepCluster   = "cluster-scoped kind not in allowClusterScoped"
)

// PlanPrune decides which objects of inventory (live objects carrying
// app's inventory label) prune deletes, given desired (the placed render
// of the commit being synced). Pure.
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
// with an error wrapping errEmpty: a wrong path or a bad rebase must not
// delete everything.
func PlanPrune(app *App, desired, inventory []*unstructured.Unstructured) (PrunePlan, error) {
	declared := map[ObjectRef]bool{}
	for _, d := range desired {
		declared[RefOf(d)] = true
	}
	allowNS := map[string]bool{}
	for _, ns := range app.AllowNamespaces {
		allowNS[ns] = true
	}
	if len(app.AllowNamespaces) == 0 {
		allowNS[app.Namespace] = true
	}
	var plan PrunePlan
	wave := map[ObjectRef]int{}
	seen := map[ObjectRef]bool{}
	for _, o := range inventory {
		ref := RefOf(o)
		if declared[ref] || seen[ref] || o.GetLabels()[LabelApp] != app.Name || !appliedByPinbot(o) || controlled(o) {
			continue
		}
		seen[ref] = true
		reason := ""
		switch {
		case o.GetAnnotations()[AnnotationPrune] == "false":
			reason = keepAnnotated
		case argoNoPrune(o):
			reason = keepArgo
		case o.GetDeletionTimestamp() != nil:
			reason = keepDeleting
		case o.GetNamespace() != "" && !allowNS[o.GetNamespace()]:
			reason = fmt.Sprintf("namespace %q is not in allowNamespaces %v", o.GetNamespace(), app.AllowNamespaces)
		case ssa.IsNamespace(o):
			reason = keepNamespace
		case ssa.IsCRD(o):
			reason = keepCRD
		case o.GetNamespace() == "" && !clusterScopedAllowed(app, allowNS, o):
			reason = keepCluster
		}
		if reason != "" {
			plan.Keep = append(plan.Keep, KeptObject{Object: ref, Reason: reason})
			continue
		}
		wave[ref], _ = WaveOf(o) // a bad annotation on an orphan orders it as wave 0
		plan.Delete = append(plan.Delete, ref)
	}
	sortRefs(plan.Delete)
	sort.SliceStable(plan.Delete, func(i, j int) bool { return wave[plan.Delete[i]] > wave[plan.Delete[j]] })
	sort.Slice(plan.Keep, func(i, j int) bool { return refLess(plan.Keep[i].Object, plan.Keep[j].Object) })
	if len(desired) == 0 && !app.SyncPolicy.AllowEmpty && len(plan.Delete) > 0 {
		n := fmt.Sprintf("%d objects", len(plan.Delete))
		if len(plan.Delete) == 1 {
			n = "1 object"
		}
		return PrunePlan{}, fmt.Errorf("refusing to delete %s of the app: %w", n, errEmpty)
	}
	return plan, nil
}

// appliedByPinbot reports whether pinbot's field manager has applied u.
func appliedByPinbot(u *unstructured.Unstructured) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// controlled reports whether u has a controller owner reference.
func controlled(u *unstructured.Unstructured) bool {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// degradeEmpty marks s Degraded when err refused an empty render (with
// allowEmpty off): the app's objects stay as they are, but Git now says
// to delete them all, which a person must look at. The refusal is the
// reason. Other errors leave s alone.
func degradeEmpty(s *AppStatus, err error) {
	if errors.Is(err, errEmpty) {
		s.Health, s.HealthReason = Degraded, err.Error()
	}
}
