package reconciler

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// orphans lists the objects of app's inventory that desired no longer
// declares, from the watch caches, except those annotated
// argocd.argoproj.io/compare-options: IgnoreExtraneous. The first call lists the whole
// inventory once (every kind, in app's allowed namespaces) to learn its
// kinds; later calls watch those kinds and every kind desired holds.
func (r *Reconciler) orphans(ctx context.Context, app *App, st *appState, desired []*unstructured.Unstructured) ([]ObjectRef, error) {
	st.mu.Lock()
	listed := st.listed
	st.mu.Unlock()
	var found []*unstructured.Unstructured
	if !listed {
		inv, err := r.applier.InventoryIn(ctx, app.Name, app.AllowNamespaces)
		if err != nil {
			return nil, err
		}
		found = inv
	}
	declared := make(map[ObjectRef]bool, len(desired))
	st.mu.Lock()
	if st.kinds == nil {
		st.kinds = map[schema.GroupVersionKind]bool{}
	}
	for _, o := range found {
		st.kinds[o.GroupVersionKind()] = true
	}
	st.listed = true
	for _, d := range desired {
		declared[RefOf(d)] = true
		st.kinds[d.GroupVersionKind()] = true
	}
	var specs []watchSpec
	for gvk := range st.kinds {
		if m, err := r.applier.Mapping(gvk); err == nil {
			specs = append(specs, specsOf(app, gvk, m)...)
		}
	}
	st.mu.Unlock()
	if err := r.lives.ensure(ctx, app.Name, specs); err != nil {
		return nil, err
	}
	seen := map[ObjectRef]bool{}
	var out []ObjectRef
	for _, s := range specs {
		objs, ok := r.lives.objects(app.Name, s)
		if !ok {
			objs = nil
			for _, o := range found { // a kind we may list once but not watch
				if o.GroupVersionKind() == s.gvk && (s.ns == "" || o.GetNamespace() == s.ns) {
					objs = append(objs, o)
				}
			}
		}
		for _, o := range objs {
			ref := RefOf(o)
			// An object being deleted (a prune's foreground deletion in
			// progress) is on its way out, not orphaned.
			// Argo CD's IgnoreExtraneous keeps it out of the report (a
			// prune still deletes it, as Argo CD's does).
			if !declared[ref] && !seen[ref] && o.GetDeletionTimestamp() == nil && ssa.InInventory(o, app.Name) && !ignoreExtraneous(o) {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	sortRefs(out)
	return out, nil
}
