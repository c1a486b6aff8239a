package reconciler

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// Scope reports whether objects of a kind live in a namespace. The
// Reconciler answers it from the cluster's discovery REST mapper.
type Scope func(gvk schema.GroupVersionKind) (namespaced bool, err error)

// GuardError is a rendered object the app may not write. Any GuardError
// stops the sync before anything is applied.
type GuardError struct {
	Object ObjectRef
	Reason string
}

// Error names the object or file and the cause.
func (e *GuardError) Error() string { return fmt.Sprintf("%s refused: %s", e.Object, e.Reason) }

// Place decides where each rendered object goes and whether the app may
// write it. It returns copies of objs with the namespace of namespaced
// objects defaulted to app.Namespace and cleared on cluster-scoped ones.
//
// A namespaced object must land in one of app.AllowNamespaces. A
// cluster-scoped object is refused unless its kind is in
// app.AllowClusterScoped, or it is a Namespace named in AllowNamespaces.
// An object declared twice is refused too. Kinds defined by a
// CustomResourceDefinition in objs take their scope from it, so a CRD and
// its first objects can be applied in one sync. Every violation is
// reported, joined; a scope lookup failure stops at once.
func Place(app *App, objs []*unstructured.Unstructured, scope Scope) ([]*unstructured.Unstructured, error) {
	crdScope := declaredScopes(objs)
	allowNS := map[string]bool{}
	for _, ns := range app.AllowNamespaces {
		allowNS[ns] = true
	}
	if len(app.AllowNamespaces) == 0 {
		allowNS[app.Namespace] = true
	}
	var errs []error
	seen := map[ObjectRef]bool{}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		o = o.DeepCopy()
		gvk := o.GroupVersionKind()
		namespaced, ok := crdScope[gvk.GroupKind()]
		if !ok {
			var err error
			if namespaced, err = scope(gvk); err != nil {
				return nil, fmt.Errorf("looking up the scope of %s: %w", RefOf(o), err)
			}
		}
		if namespaced {
			if o.GetNamespace() == "" {
				o.SetNamespace(app.Namespace)
			}
			if !allowNS[o.GetNamespace()] {
				errs = append(errs, &GuardError{Object: RefOf(o), Reason: fmt.Sprintf("namespace %q is not in allowNamespaces %v", o.GetNamespace(), app.AllowNamespaces)})
			}
		} else {
			o.SetNamespace("")
			if !clusterScopedAllowed(app, allowNS, o) {
				errs = append(errs, &GuardError{Object: RefOf(o), Reason: "cluster-scoped kind not in allowClusterScoped"})
			}
		}
		ref := RefOf(o)
		if seen[ref] {
			errs = append(errs, &GuardError{Object: ref, Reason: "declared twice"})
		}
		seen[ref] = true
		out = append(out, o)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func clusterScopedAllowed(app *App, allowNS map[string]bool, o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	if gvk.Group == "" && gvk.Kind == "Namespace" && allowNS[o.GetName()] {
		return true
	}
	for _, k := range app.AllowClusterScoped {
		switch {
		case k == "*":
			return true
		case gvk.Group == "" && k == gvk.Kind:
			return true
		case k == gvk.Group+"/"+gvk.Kind:
			return true
		}
	}
	return false
}

// declaredScopes maps the kinds defined by CRDs among objs to whether they
// are namespaced.
func declaredScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	m := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if !ssa.IsCRD(o) {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		if kind != "" {
			m[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
		}
	}
	return m
}
