package reconciler

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
		ok, err := r.applier.DeleteForeground(ctx, live[ref])
		if err != nil {
			return plan, deleted, err
		}
		if ok {
			deleted = append(deleted, ref)
		}
	}
	return plan, deleted, nil
}

// pruneInventory lists app's inventory where prune may act (see
// Applier.Inventory): namespaced kinds in app's allowNamespaces only (an
// app never deletes what it may not write), cluster-scoped kinds
// cluster-wide.
func (r *Reconciler) pruneInventory(ctx context.Context, app *App) ([]*unstructured.Unstructured, error) {
	return r.applier.InventoryIn(ctx, app.Name, app.AllowNamespaces)
}
