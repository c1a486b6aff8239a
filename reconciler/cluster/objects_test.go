package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// Objects keeps an object's JSON, less what pinbot never reads, and
// every read decodes a copy of its own.
func TestCompactObject(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": "web", "namespace": "argocd", "resourceVersion": "42",
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{…}", "team": "web"},
		},
		"spec":   map[string]any{"project": "default"},
		"status": map[string]any{"sync": map[string]any{"revision": "abc"}},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply}})
	obj, err := compactObject(u)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err != nil || key != "argocd/web" {
		t.Fatalf("store key %q, %v; want argocd/web", key, err)
	}
	a, ok := fromCache(obj)
	if !ok {
		t.Fatal("fromCache: not decoded")
	}
	if a.GetManagedFields() != nil || a.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Errorf("kept managed fields %v or the last applied copy", a.GetManagedFields())
	}
	if a.GetAnnotations()["team"] != "web" || a.GetResourceVersion() != "42" {
		t.Errorf("lost metadata: %v", a.Object["metadata"])
	}
	if rev, _, _ := unstructured.NestedString(a.Object, "status", "sync", "revision"); rev != "abc" {
		t.Errorf("status.sync.revision %q, want abc", rev)
	}
	unstructured.SetNestedField(a.Object, "changed", "spec", "project")
	b, _ := fromCache(obj)
	if p, _, _ := unstructured.NestedString(b.Object, "spec", "project"); p != "default" {
		t.Errorf("a read's change reached the cache: spec.project %q", p)
	}
	if other, err := compactObject("tombstone"); err != nil || other != "tombstone" {
		t.Errorf("compactObject of another type = %v, %v; want it unchanged", other, err)
	}
}
