package ssa

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/object"
)

// Versions reads, past every cache, the version of each wanted object that
// again lacks, and adds to again those that exist, as their metadata:
// what a proof's confirmation compares (the UID and resourceVersion). The
// objects of one kind and namespace are read by one metadata LIST, which
// every call that asked before it began shares: the proofs of thousands
// of apps confirmed at once, as at a start, cost a LIST per namespace
// instead of a GET each. Where pinbot may not list, it GETs. Objects of
// kinds not served stay missing.
func (a *Applier) Versions(ctx context.Context, want, again map[object.Ref]*unstructured.Unstructured) error {
	type scope struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	groups := map[scope]map[object.Ref]*unstructured.Unstructured{}
	for ref, d := range want {
		m, err := a.Mapping(d.GroupVersionKind())
		if again[ref] != nil || err != nil {
			continue // kind not served: missing
		}
		s := scope{m.Resource, d.GetNamespace()}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			s.ns = ""
		}
		if groups[s] == nil {
			groups[s] = map[object.Ref]*unstructured.Unstructured{}
		}
		groups[s][ref] = d
	}
	for s, refs := range groups {
		versions, err := a.vers.Do(ctx, s.gvr.String()+"\x00"+s.ns, func(ctx context.Context) (map[string]*metav1.PartialObjectMetadata, error) {
			list, err := a.md.Resource(s.gvr).Namespace(s.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make(map[string]*metav1.PartialObjectMetadata, len(list.Items))
			for i := range list.Items {
				out[list.Items[i].Name] = &list.Items[i]
			}
			return out, nil
		})
		switch {
		case apierrors.IsForbidden(err):
			if err := a.GetMissing(ctx, refs, again); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("listing %s in %q: %w", s.gvr.Resource, s.ns, err)
		}
		for ref, d := range refs {
			if m := versions[ref.Name]; m != nil {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(d.GroupVersionKind())
				u.SetNamespace(m.Namespace)
				u.SetName(m.Name)
				u.SetUID(m.UID)
				u.SetResourceVersion(m.ResourceVersion)
				again[ref] = u
			}
		}
	}
	return nil
}
