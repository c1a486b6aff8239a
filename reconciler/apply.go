package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// ApplyError stops a sync: it names the object whose apply failed and
// carries the API server's error.
type ApplyError struct {
	Object ObjectRef
	Err    error
}

// Error names the object or file and the cause.
func (e *ApplyError) Error() string { return fmt.Sprintf("applying %s: %s", e.Object, e.Err) }

// Unwrap returns the cause.
func (e *ApplyError) Unwrap() error { return e.Err }

// crdWait bounds how long Apply waits for new CRDs to be established.
const crdWait = 60 * time.Second

// Applier applies objects with server-side apply through the dynamic
// client, mapping kinds to resources with a discovery REST mapper backed by
// an in-memory cache that is reset when a kind is not found.
type Applier struct {
	dyn    dynamic.Interface
	disc   discovery.CachedDiscoveryInterface // shared with mapper; Reset clears both
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier returns an Applier over dyn, discovering kinds through disc.
func NewApplier(dyn dynamic.Interface, disc discovery.DiscoveryInterface) *Applier {
	cached := memory.NewMemCacheClient(disc)
	return &Applier{dyn: dyn, disc: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}
}

// discovery is the Applier's cached discovery client (see Inventory).
func (a *Applier) discovery() discovery.DiscoveryInterface { return a.disc }

// mapping finds the resource of gvk, refreshing discovery once on a miss
// (a CRD installed since the cache filled).
func (a *Applier) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
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

// Scope reports whether gvk is namespaced; it satisfies the Scope type.
func (a *Applier) Scope(gvk schema.GroupVersionKind) (bool, error) {
	m, err := a.mapping(gvk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (a *Applier) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	m, err := a.mapping(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

// Apply server-side applies objs (placed by Place) for app, with field
// manager "pinbot" and forced conflicts, each stamped with the inventory
// label and config hash. Namespaces go first, then CRDs (and Apply waits
// until they are established), then everything else in render order. The
// first failure stops the sync with an *ApplyError; objects applied before
// it stay applied. It returns the references applied. A sync calls it
// once per wave (see PlanWaves and applyWaves).
func (a *Applier) Apply(ctx context.Context, app string, objs []*unstructured.Unstructured) ([]ObjectRef, error) {
	var done []ObjectRef
	for _, batch := range batches(objs) {
		var crds []*unstructured.Unstructured
		for _, o := range batch {
			if err := a.applyOne(ctx, app, o); err != nil {
				return done, err
			}
			done = append(done, RefOf(o))
			if isCRD(o) {
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

func (a *Applier) applyOne(ctx context.Context, app string, o *unstructured.Unstructured) error {
	s, err := stamp(o, app)
	if err != nil {
		return &ApplyError{Object: RefOf(o), Err: err}
	}
	ri, err := a.resource(s)
	if err != nil {
		return &ApplyError{Object: RefOf(o), Err: err}
	}
	if _, err := ri.Apply(ctx, s.GetName(), s, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return &ApplyError{Object: RefOf(o), Err: err}
	}
	return nil
}

// batches orders objs for applying: Namespaces, then CRDs, then the rest in
// their given order. Empty batches are dropped. A sync first splits its
// objects into waves (PlanWaves, which puts every Namespace and CRD in the
// first wave); batches orders the objects of one wave.
func batches(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var ns, crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case isNamespace(o):
			ns = append(ns, o)
		case isCRD(o):
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
			return &ApplyError{Object: RefOf(c), Err: fmt.Errorf("waiting for the CRD to be established: %w", err)}
		}
	}
	return nil
}

// Live returns the cluster's copy of each desired object that exists. It
// lists each kind and namespace once by app's inventory label, then GETs
// the desired objects the lists did not return (new to the app, or not yet
// applied by pinbot).
func (a *Applier) Live(ctx context.Context, app string, desired []*unstructured.Unstructured) (map[ObjectRef]*unstructured.Unstructured, error) {
	type group struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	want := map[ObjectRef]*unstructured.Unstructured{}
	groups := map[group]bool{}
	for _, d := range desired {
		want[RefOf(d)] = d
		groups[group{d.GroupVersionKind(), d.GetNamespace()}] = true
	}
	live := map[ObjectRef]*unstructured.Unstructured{}
	for g := range groups {
		m, err := a.mapping(g.gvk)
		if err != nil {
			continue // kind not served (a CRD not applied yet): the objects are missing
		}
		var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = a.dyn.Resource(m.Resource).Namespace(g.ns)
		}
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: LabelApp + "=" + app})
		if err != nil {
			if apierrors.IsForbidden(err) {
				continue // fall back to GETs below
			}
			return nil, fmt.Errorf("listing %s in %q: %w", m.Resource.Resource, g.ns, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			item.SetAPIVersion(g.gvk.GroupVersion().String())
			item.SetKind(g.gvk.Kind)
			if ref := RefOf(item); want[ref] != nil {
				live[ref] = item
			}
		}
	}
	if err := a.getMissing(ctx, want, live); err != nil {
		return nil, err
	}
	return live, nil
}

// getMissing GETs each wanted object that live lacks and adds those that
// exist. Objects of kinds not served (a CRD not applied yet) stay missing.
func (a *Applier) getMissing(ctx context.Context, want, live map[ObjectRef]*unstructured.Unstructured) error {
	for ref, d := range want {
		if live[ref] != nil {
			continue
		}
		ri, err := a.resource(d)
		if err != nil {
			continue // kind not served: missing
		}
		got, err := ri.Get(ctx, d.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading %s: %w", ref, err)
		default:
			live[ref] = got
		}
	}
	return nil
}

// isTransient reports whether a Kubernetes API error is worth retrying with
// backoff rather than reporting as a verdict on the manifests.
func isTransient(err error) bool {
	var ae *ApplyError
	if errors.As(err, &ae) {
		err = ae.Err
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
		errors.Is(err, context.DeadlineExceeded) || isConnError(err)
}

func isConnError(err error) bool {
	var ne net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.As(err, &ne)
}
