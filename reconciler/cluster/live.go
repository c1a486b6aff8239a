package cluster

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/object"
)

// Live returns c's copy of each desired object that exists,
// read from the watch caches of app's inventory (started on first use):
// desired kinds in namespaces (app's allowed ones), cluster-scoped kinds
// cluster-wide. Desired objects the caches lack (not yet labelled for the
// app, or of a kind pinbot may not list) are read with a GET. Kinds not
// served yet (a CRD not applied) leave their objects missing. The objects
// are shared with the caches: do not modify them.
func (c *Cluster) Live(ctx context.Context, app string, namespaces []string, desired []*unstructured.Unstructured) (map[object.Ref]*unstructured.Unstructured, error) {
	want := make(map[object.Ref]*unstructured.Unstructured, len(desired))
	specs := map[WatchSpec]bool{}
	for _, d := range desired {
		m, err := c.Applier.Mapping(d.GroupVersionKind())
		switch {
		case meta.IsNoMatchError(err):
			continue // kind not served: missing
		case err != nil:
			return nil, err // discovery failed: the API is not answering
		}
		want[object.RefOf(d)] = d
		for _, s := range Specs(d.GroupVersionKind(), m, namespaces) {
			specs[s] = true
		}
	}
	list := make([]WatchSpec, 0, len(specs))
	for s := range specs {
		list = append(list, s)
	}
	if err := c.Lives.Ensure(ctx, app, list); err != nil {
		return nil, err
	}
	live := make(map[object.Ref]*unstructured.Unstructured, len(want))
	for _, s := range list {
		objs, _ := c.Lives.Objects(app, s)
		for _, o := range objs {
			if ref := object.RefOf(o); want[ref] != nil {
				live[ref] = o
			}
		}
	}
	if err := c.Applier.GetMissing(ctx, want, live); err != nil {
		return nil, err
	}
	return live, nil
}

// Specs lists the watches that cover kind gvk (mapped by m) in
// namespaces, or cluster-wide for a cluster-scoped kind.
func Specs(gvk schema.GroupVersionKind, m *meta.RESTMapping, namespaces []string) []WatchSpec {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return []WatchSpec{{GVK: gvk, GVR: m.Resource}}
	}
	out := make([]WatchSpec, 0, len(namespaces))
	for _, ns := range namespaces {
		out = append(out, WatchSpec{GVK: gvk, GVR: m.Resource, Namespace: ns})
	}
	return out
}
