package reconciler

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/prune"
)

// orphans lists the objects of the app's inventory that the pass's
// desired objects no longer declare, from the watch caches, except those
// annotated argocd.argoproj.io/compare-options: IgnoreExtraneous. The
// first call lists the whole inventory once (every kind, in the app's
// allowed namespaces) to learn its kinds; later calls watch those kinds,
// every kind desired holds and every kind a sync applied.
//
// That first listing is shared by every app of the replica that began
// passing before it did: a replica taking over thousands of apps lists
// each namespace once, not once per app that asks while a listing is
// under way. What its apps applied since is in their kinds (noteKinds).
func (p *pass) orphans(ctx context.Context) ([]object.Ref, error) {
	st := p.st
	var found []*unstructured.Unstructured
	if !st.listed {
		inv, err := p.c.Applier.InventoryShared(ctx, p.app.Name, p.app.AllowNamespaces, st.since())
		if err != nil {
			return nil, err
		}
		found = inv
	}
	p.noteKinds(found)
	st.listed = true
	declared := make(map[object.Ref]bool, len(p.desired))
	for _, d := range p.desired {
		declared[object.RefOf(d)] = true
	}
	p.noteKinds(p.desired)
	var specs []cluster.WatchSpec
	for gvk := range st.kinds {
		if m, err := p.c.Applier.Mapping(gvk); err == nil {
			specs = append(specs, cluster.Specs(gvk, m, p.app.AllowNamespaces)...)
		}
	}
	if err := p.c.Lives.Ensure(ctx, p.app.Name, specs); err != nil {
		return nil, err
	}
	seen := map[object.Ref]bool{}
	var out []object.Ref
	for _, s := range specs {
		objs, ok := p.c.Lives.Objects(p.app.Name, s)
		if !ok {
			objs = nil
			for _, o := range found { // a kind we may list once but not watch
				if o.GroupVersionKind() == s.GVK && (s.Namespace == "" || o.GetNamespace() == s.Namespace) {
					objs = append(objs, o)
				}
			}
		}
		for _, o := range objs {
			ref := object.RefOf(o)
			// An object being deleted (a prune's foreground deletion in
			// progress) is on its way out, not orphaned.
			// Argo CD's IgnoreExtraneous keeps it out of the report (a
			// prune still deletes it, as Argo CD's does).
			if !declared[ref] && !seen[ref] && o.GetDeletionTimestamp() == nil && object.InInventory(o, p.app.Name) && !hook.IgnoreExtraneous(o) {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	object.Sort(out)
	return out, nil
}

// noteKinds adds the kinds of objs to the app's inventory kinds.
func (p *pass) noteKinds(objs []*unstructured.Unstructured) {
	if p.st.kinds == nil {
		p.st.kinds = map[schema.GroupVersionKind]bool{}
	}
	for _, o := range objs {
		p.st.kinds[o.GroupVersionKind()] = true
	}
}

// pruneOrphans deletes the app's orphans as prune.Plan decides, given
// the desired objects just applied, with foreground propagation so that
// what they own goes first. It returns the plan and the objects deleted.
// The first failed deletion stops it with an *ssa.PruneError.
//
// The caller decides whether to prune at all (mayPrune): only a sync of
// a freshly fetched commit whose waves all applied, with prune on (the
// app's policy or `pinbot sync --prune`).
func (p *pass) pruneOrphans(ctx context.Context) (prune.Orphans, []object.Ref, error) {
	// Namespaced kinds in the app's allowNamespaces only (an app never
	// deletes what it may not write), cluster-scoped kinds cluster-wide.
	inv, err := p.c.Applier.InventoryIn(ctx, p.app.Name, p.app.AllowNamespaces)
	if err != nil {
		return prune.Orphans{}, nil, err
	}
	plan, err := prune.Plan(p.app, p.desired, inv)
	if err != nil {
		return prune.Orphans{}, nil, err
	}
	live := map[object.Ref]*unstructured.Unstructured{}
	for _, o := range inv {
		live[object.RefOf(o)] = o
	}
	var deleted []object.Ref
	for _, ref := range plan.Delete {
		ok, err := p.c.Applier.DeleteForeground(ctx, live[ref])
		if err != nil {
			return plan, deleted, err
		}
		if ok {
			deleted = append(deleted, ref)
		}
	}
	return plan, deleted, nil
}
