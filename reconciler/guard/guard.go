// Package guard decides where each rendered object goes and whether an app
// may write it: the namespace allow-list, the cluster-scoped kinds an app
// may apply, objects declared twice. A refusal is an *Error naming the
// object, and any refusal stops a sync before anything is applied. Pure.
package guard

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/object"
)

// Scope reports whether objects of a kind live in a namespace. The
// Reconciler answers it from the cluster's discovery REST mapper.
type Scope func(gvk schema.GroupVersionKind) (namespaced bool, err error)

// Error is a rendered object the app may not write, or may not write as
// it is declared (a bad wave or hook annotation). Any Error stops the sync
// before anything is applied.
type Error struct {
	Object object.Ref
	Reason string
}

// ErrEmpty refuses a render without objects: a wrong path or a bad rebase
// must not look like "nothing to run", nor prune everything.
var ErrEmpty = errors.New("the render holds no objects (set syncPolicy.allowEmpty to accept that)")

// Error names the object and the cause.
func (e *Error) Error() string { return fmt.Sprintf("%s refused: %s", e.Object, e.Reason) }

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
func Place(app *config.App, objs []*unstructured.Unstructured, scope Scope) ([]*unstructured.Unstructured, error) {
	crdScope := DeclaredScopes(objs)
	allowNS := Namespaces(app)
	var errs []error
	seen := map[object.Ref]bool{}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		o = o.DeepCopy()
		gvk := o.GroupVersionKind()
		namespaced, ok := crdScope[gvk.GroupKind()]
		if !ok {
			var err error
			if namespaced, err = scope(gvk); err != nil {
				return nil, fmt.Errorf("looking up the scope of %s: %w", object.RefOf(o), err)
			}
		}
		if namespaced {
			if o.GetNamespace() == "" {
				o.SetNamespace(app.Namespace)
			}
			if !allowNS[o.GetNamespace()] {
				errs = append(errs, &Error{Object: object.RefOf(o), Reason: fmt.Sprintf("namespace %q is not in allowNamespaces %v", o.GetNamespace(), app.AllowNamespaces)})
			}
		} else {
			o.SetNamespace("")
			if !ClusterScopedAllowed(app, o) {
				errs = append(errs, &Error{Object: object.RefOf(o), Reason: "cluster-scoped kind not in allowClusterScoped"})
			}
		}
		ref := object.RefOf(o)
		if seen[ref] {
			errs = append(errs, &Error{Object: ref, Reason: "declared twice"})
		}
		seen[ref] = true
		out = append(out, o)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Namespaces is the set of namespaces app may write to: its
// allowNamespaces, or just its namespace.
func Namespaces(app *config.App) map[string]bool {
	allow := map[string]bool{}
	for _, ns := range app.AllowNamespaces {
		allow[ns] = true
	}
	if len(app.AllowNamespaces) == 0 {
		allow[app.Namespace] = true
	}
	return allow
}

// ClusterScopedAllowed reports whether app may write the cluster-scoped
// object o: its kind is in allowClusterScoped, or it is a Namespace app
// may write to.
func ClusterScopedAllowed(app *config.App, o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	if gvk.Group == "" && gvk.Kind == "Namespace" && Namespaces(app)[o.GetName()] {
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

// DeclaredScopes maps the kinds defined by CRDs among objs to whether they
// are namespaced.
func DeclaredScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	m := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if !object.IsCRD(o) {
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
