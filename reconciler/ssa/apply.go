// Package ssa is pinbot's one way of writing to a cluster: it server-side
// applies objects (stamped with the inventory label and config hash, field
// manager "pinbot", forced), dry-runs them, reads them back, lists an app's
// inventory and deletes orphans, through the dynamic client and a cached
// discovery REST mapper, as fluxcd/pkg/ssa does for Flux.
//
// It is a leaf: it knows nothing of apps, policies or history (the
// layering test forbids it from importing the rest of the module). The
// reconciler decides what to apply; ssa applies it.
package ssa

import (
	"context"
	"fmt"
	"time"

	"pinbot.dev/pinbot/internal/coalesce"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"

	"pinbot.dev/pinbot/reconciler/object"
)

// ApplyError stops a sync: it names the object whose apply (or dry run)
// failed and carries the API server's error.
type ApplyError struct {
	Object object.Ref
	Err    error
	// DryRun says the failed apply was a dry run.
	DryRun bool
}

// Error names the object and the cause.
func (e *ApplyError) Error() string {
	if e.DryRun {
		return fmt.Sprintf("dry-run applying %s: %s", e.Object, e.Err)
	}
	return fmt.Sprintf("applying %s: %s", e.Object, e.Err)
}

// Unwrap returns the cause.
func (e *ApplyError) Unwrap() error { return e.Err }

// crdWait bounds how long Apply waits for new CRDs to be established.
const crdWait = 60 * time.Second

// Applier applies objects with server-side apply through the dynamic
// client, mapping kinds to resources with a discovery REST mapper backed by
// an in-memory cache that is reset when a kind is not found. It is safe for
// concurrent use.
type Applier struct {
	dyn    dynamic.Interface
	md     metadata.Interface                 // inventories list metadata only
	disc   discovery.CachedDiscoveryInterface // shared with mapper; Reset clears both
	mapper *restmapper.DeferredDiscoveryRESTMapper
	cens   coalesce.Fresh[census]                                   // InventoryShared's listings, by scope
	vers   coalesce.Fresh[map[string]*metav1.PartialObjectMetadata] // Versions' listings, by scope
}

// New returns an Applier that applies through dyn, lists inventories
// through md and discovers kinds through disc.
func New(dyn dynamic.Interface, md metadata.Interface, disc discovery.DiscoveryInterface) *Applier {
	cached := memory.NewMemCacheClient(disc)
	return &Applier{dyn: dyn, md: md, disc: cached, cens: coalesce.Fresh[census]{Keep: censusKeep}, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}
}

// Mapping finds the resource of gvk, refreshing discovery once on a miss
// (a CRD installed since the cache filled).
func (a *Applier) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	return m, nil
}

// Scope reports whether gvk is namespaced.
func (a *Applier) Scope(gvk schema.GroupVersionKind) (bool, error) {
	m, err := a.Mapping(gvk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resource returns the client of u's resource in u's namespace.
func (a *Applier) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	m, err := a.Mapping(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	return a.client(m, u.GetNamespace()), nil
}

// client returns the client of m's resource, in ns when it is namespaced.
func (a *Applier) client(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(ns)
	}
	return a.dyn.Resource(m.Resource)
}

// ApplyOption changes one ApplyObject call.
type ApplyOption func(*applyOptions)

type applyOptions struct {
	dryRun bool
	edit   func(*unstructured.Unstructured)
}

// DryRun asks the API server what the apply would make of the object,
// persisting nothing.
func DryRun() ApplyOption { return func(o *applyOptions) { o.dryRun = true } }

// Edit lets fn change the stamped object just before it is sent (a heal
// keeps ignored fields at their live values). The config hash stays that
// of the object as given.
func Edit(fn func(stamped *unstructured.Unstructured)) ApplyOption {
	return func(o *applyOptions) { o.edit = fn }
}

// ApplyObject server-side applies o for app: stamped (see Stamp), field
// manager "pinbot", forced conflicts. It returns the object as the API
// server made it. Every failure is an *ApplyError naming o. This is the
// one apply path: Apply, drift dry runs, heals and sync plans go through
// it.
func (a *Applier) ApplyObject(ctx context.Context, app string, o *unstructured.Unstructured, opts ...ApplyOption) (*unstructured.Unstructured, error) {
	var ao applyOptions
	for _, opt := range opts {
		opt(&ao)
	}
	fail := func(err error) error { return &ApplyError{Object: object.RefOf(o), Err: err, DryRun: ao.dryRun} }
	s, err := object.Stamp(o, app)
	if err != nil {
		return nil, fail(err)
	}
	if ao.edit != nil {
		ao.edit(s)
	}
	ri, err := a.resource(s)
	if err != nil {
		return nil, fail(err)
	}
	po := metav1.ApplyOptions{FieldManager: object.FieldManager, Force: true}
	if ao.dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	got, err := ri.Apply(ctx, s.GetName(), s, po)
	if err != nil {
		return nil, fail(err)
	}
	return got, nil
}

// Apply server-side applies objs for app with ApplyObject. Namespaces go
// first, then CRDs (and Apply waits until they are established), then
// everything else in the given order. The first failure stops it with an
// *ApplyError; objects applied before it stay applied. It returns the
// objects as applied, in apply order.
func (a *Applier) Apply(ctx context.Context, app string, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var done []*unstructured.Unstructured
	for _, batch := range batches(objs) {
		var crds []*unstructured.Unstructured
		for _, o := range batch {
			got, err := a.ApplyObject(ctx, app, o)
			if err != nil {
				return done, err
			}
			done = append(done, got)
			if object.IsCRD(o) {
				crds = append(crds, o)
			}
		}
		if len(crds) > 0 {
			if err := a.waitEstablished(ctx, crds); err != nil {
				return done, err
			}
			a.mapper.Reset()
		}
	}
	return done, nil
}

// batches orders objs for applying: Namespaces, then CRDs, then the rest in
// their given order. Empty batches are dropped.
func batches(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var ns, crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case object.IsNamespace(o):
			ns = append(ns, o)
		case object.IsCRD(o):
			crds = append(crds, o)
		default:
			rest = append(rest, o)
		}
	}
	var out [][]*unstructured.Unstructured
	for _, b := range [][]*unstructured.Unstructured{ns, crds, rest} {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// waitEstablished polls each CRD until its Established condition is True.
func (a *Applier) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, c := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdWait, true, func(ctx context.Context) (bool, error) {
			live, err := a.dyn.Resource(gvr).Get(ctx, c.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // keep polling until the deadline
			}
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return &ApplyError{Object: object.RefOf(c), Err: fmt.Errorf("waiting for the CRD to be established: %w", err)}
		}
	}
	return nil
}
