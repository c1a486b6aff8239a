package ssa

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/reconciler/object"
)

// censusTimeout bounds one shared listing: it outlives the pass that
// started it, since others wait on it too (coalesce.Fresh).
const censusTimeout = time.Minute

// censusKeep is how long a listing may still answer the apps that began
// passing before it (InventoryShared): a takeover's first passes, which
// run a few dozen at a time, spread over about that long.
const censusKeep = time.Minute

// census is one listing, for every app at once, of the objects that
// carry the inventory label in one scope: a namespace, or "" for the
// cluster-scoped kinds; by app.
type census map[string][]*unstructured.Unstructured

// InventoryShared is InventoryIn for many apps passing at once, as a
// replica's first passes of thousands of apps do: each scope (a
// namespace, and the cluster-scoped kinds) is listed for every app at
// once, and an app is answered by a listing that began at since or
// later (one under way, or one that ended within censusKeep), so it
// misses nothing written before since. A burst of apps then costs a LIST
// or two per kind and scope, not one per kind for every app. With
// namespaces nil (every namespace) it is InventoryIn.
func (a *Applier) InventoryShared(ctx context.Context, app string, namespaces []string, since time.Time) ([]*unstructured.Unstructured, error) {
	if namespaces == nil {
		return a.InventoryIn(ctx, app, nil)
	}
	seen := map[types.UID]bool{}
	var out []*unstructured.Unstructured
	for _, scope := range append([]string{""}, namespaces...) {
		c, err := a.cens.DoSince(ctx, scope, since, func(ctx context.Context) (census, error) { return a.take(ctx, scope) })
		if err != nil {
			return nil, fmt.Errorf("the inventory of %s: %w", app, err)
		}
		for _, o := range c[app] {
			if !seen[o.GetUID()] && object.InInventory(o, app) {
				seen[o.GetUID()] = true
				out = append(out, o.DeepCopy())
			}
		}
	}
	return out, nil
}

// take lists scope for every app at once.
func (a *Applier) take(ctx context.Context, scope string) (census, error) {
	ctx, cancel := context.WithTimeout(ctx, censusTimeout)
	defer cancel()
	var objs []*unstructured.Unstructured
	var err error
	if scope == "" {
		objs, err = a.listLabelled(ctx, object.LabelApp, true, []string{})
	} else {
		objs, err = a.listLabelled(ctx, object.LabelApp, false, []string{scope})
	}
	if err != nil {
		return nil, err
	}
	c := census{}
	for _, o := range objs {
		app := o.GetLabels()[object.LabelApp]
		c[app] = append(c[app], o)
	}
	return c, nil
}
