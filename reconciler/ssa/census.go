package ssa

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/reconciler/object"
)

// censusTimeout bounds one shared listing: it outlives the pass that
// started it, since others wait on it too.
const censusTimeout = time.Minute

// census is one listing, for every app at once, of the objects that
// carry the inventory label in one scope: a namespace, or "" for the
// cluster-scoped kinds.
type census struct {
	began time.Time
	done  chan struct{}
	byApp map[string][]*unstructured.Unstructured
	err   error
}

// censuses are the listings under way, by scope.
type censuses struct {
	mu      sync.Mutex
	pending map[string]*census
}

// InventoryShared is InventoryIn for many apps passing at once, as a
// replica's first passes of thousands of apps do: each scope (a
// namespace, and the cluster-scoped kinds) is listed for every app at
// once, and an app is answered by a listing that began after it asked,
// so it misses nothing written before. A burst of apps then costs a LIST
// or two per kind and scope, not one per kind for every app. With
// namespaces nil (every namespace) it is InventoryIn.
func (a *Applier) InventoryShared(ctx context.Context, app string, namespaces []string) ([]*unstructured.Unstructured, error) {
	if namespaces == nil {
		return a.InventoryIn(ctx, app, nil)
	}
	asked := time.Now()
	seen := map[types.UID]bool{}
	var out []*unstructured.Unstructured
	for _, scope := range append([]string{""}, namespaces...) {
		c, err := a.census(ctx, scope, asked)
		if err != nil {
			return nil, fmt.Errorf("the inventory of %s: %w", app, err)
		}
		for _, o := range c.byApp[app] {
			if !seen[o.GetUID()] && object.InInventory(o, app) {
				seen[o.GetUID()] = true
				out = append(out, o.DeepCopy())
			}
		}
	}
	return out, nil
}

// census returns a listing of scope that began at or after asked: the
// one under way if it did, else the next, which it starts once the one
// under way (if any) has ended.
func (a *Applier) census(ctx context.Context, scope string, asked time.Time) (*census, error) {
	for {
		a.cens.mu.Lock()
		if a.cens.pending == nil {
			a.cens.pending = map[string]*census{}
		}
		c := a.cens.pending[scope]
		if c == nil {
			c = &census{began: time.Now(), done: make(chan struct{})}
			a.cens.pending[scope] = c
			a.cens.mu.Unlock()
			a.take(ctx, scope, c)
			return c, c.err
		}
		a.cens.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !c.began.Before(asked) {
			return c, c.err
		}
	}
}

// take lists scope into c, then lets its waiters read it.
func (a *Applier) take(ctx context.Context, scope string, c *census) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), censusTimeout)
	defer cancel()
	var objs []*unstructured.Unstructured
	if scope == "" {
		objs, c.err = a.listLabelled(lctx, object.LabelApp, true, []string{})
	} else {
		objs, c.err = a.listLabelled(lctx, object.LabelApp, false, []string{scope})
	}
	c.byApp = map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		app := o.GetLabels()[object.LabelApp]
		c.byApp[app] = append(c.byApp[app], o)
	}
	a.cens.mu.Lock()
	delete(a.cens.pending, scope) // a later ask needs a later listing
	a.cens.mu.Unlock()
	close(c.done)
}
