package ssa

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/object"
)

// Live reads the cluster's copy of each desired object that exists, from
// the API server (no cache). It lists each kind and namespace once by
// app's inventory label, then GETs the desired objects the lists did not
// return (new to the app, or not yet applied by pinbot).
func (a *Applier) Live(ctx context.Context, app string, desired []*unstructured.Unstructured) (map[object.Ref]*unstructured.Unstructured, error) {
	type group struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	want := map[object.Ref]*unstructured.Unstructured{}
	groups := map[group]bool{}
	for _, d := range desired {
		want[object.RefOf(d)] = d
		groups[group{d.GroupVersionKind(), d.GetNamespace()}] = true
	}
	live := map[object.Ref]*unstructured.Unstructured{}
	for g := range groups {
		m, err := a.Mapping(g.gvk)
		if err != nil {
			continue // kind not served (a CRD not applied yet): the objects are missing
		}
		list, err := a.client(m, g.ns).List(ctx, metav1.ListOptions{LabelSelector: object.LabelApp + "=" + app})
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
			if ref := object.RefOf(item); want[ref] != nil {
				live[ref] = item
			}
		}
	}
	if err := a.GetMissing(ctx, want, live); err != nil {
		return nil, err
	}
	return live, nil
}

// GetMissing GETs each wanted object that live lacks and adds those that
// exist. Objects of kinds not served (a CRD not applied yet) stay missing.
func (a *Applier) GetMissing(ctx context.Context, want, live map[object.Ref]*unstructured.Unstructured) error {
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
