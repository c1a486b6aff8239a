package reconciler

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// PruneError stops a prune: it names the object whose deletion failed and
// carries the API server's error.
type PruneError struct {
	Object ObjectRef
	Err    error
}

// Error names the object and the cause.
func (e *PruneError) Error() string { return fmt.Sprintf("pruning %s: %s", e.Object, e.Err) }

// Unwrap returns the cause.
func (e *PruneError) Unwrap() error { return e.Err }

// prune deletes app's orphans as PlanPrune decides, given desired (the
// placed render just applied), with foreground propagation so that what
// they own goes first. It returns the plan and the objects deleted. The
// first failed deletion stops it with a *PruneError.
//
// Callers decide whether to prune at all: only a sync of a freshly
// fetched commit whose waves all applied, with prune on (the app's
// policy or `pinbot sync --prune`).
func (r *Reconciler) prune(ctx context.Context, app *App, desired []*unstructured.Unstructured) (PrunePlan, []ObjectRef, error) {
	inv, err := r.pruneInventory(ctx, app)
	if err != nil {
		return PrunePlan{}, nil, err
	}
	plan, err := PlanPrune(app, desired, inv)
	if err != nil {
		return PrunePlan{}, nil, err
	}
	live := map[ObjectRef]*unstructured.Unstructured{}
	for _, o := range inv {
		live[RefOf(o)] = o
	}
	var deleted []ObjectRef
	for _, ref := range plan.Delete {
		ok, err := r.applier.deleteForeground(ctx, live[ref])
		if err != nil {
			return plan, deleted, err
		}
		if ok {
			deleted = append(deleted, ref)
		}
	}
	return plan, deleted, nil
}

// deleteForeground deletes u with foreground propagation, on condition
// that it is still the object listed (same UID and resourceVersion): one
// replaced or changed since, say newly annotated pinbot.dev/prune:
// "false", is left for the next sync to decide. An object already gone
// is not an error. It reports whether it deleted u.
func (a *Applier) deleteForeground(ctx context.Context, u *unstructured.Unstructured) (bool, error) {
	ref := RefOf(u)
	m, err := a.mapping(u.GroupVersionKind())
	if err != nil {
		return false, &PruneError{Object: ref, Err: err}
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if u.GetNamespace() != "" {
		ri = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	uid, rv := u.GetUID(), u.GetResourceVersion()
	policy := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
	err = ri.Delete(ctx, u.GetName(), opts)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil // gone, or changed since listed: the next sync decides
	}
	return false, &PruneError{Object: ref, Err: err}
}

// pruneInventory lists app's inventory where prune may act (see
// Applier.Inventory): namespaced kinds in app's allowNamespaces only (an
// app never deletes what it may not write), cluster-scoped kinds
// cluster-wide.
func (r *Reconciler) pruneInventory(ctx context.Context, app *App) ([]*unstructured.Unstructured, error) {
	return r.applier.inventory(ctx, app.Name, app.AllowNamespaces)
}
