package renders

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func deployment(name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"app": name}},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "registry.example/app@sha256:" + name}},
		}}},
	}}
}

func TestKept(t *testing.T) {
	var k Kept
	if _, ok := k.Get("c1"); ok {
		t.Fatal("the zero Kept holds a render")
	}
	objs := []*unstructured.Unstructured{deployment("web", 3), deployment("api", 2)}
	k.Put("c1", objs)
	k.Put("c2", nil) // a revision that renders no workload is kept too

	got, ok := k.Get("c1")
	if !ok {
		t.Fatal("Get(c1) after Put: none kept")
	}
	if diff := cmp.Diff(objs, got); diff != "" {
		t.Errorf("Get(c1) (-put +got):\n%s", diff)
	}
	// What Get returns is the caller's: changing it changes no later Get.
	got[0].SetName("changed")
	again, _ := k.Get("c1")
	if again[0].GetName() != "web" {
		t.Errorf("a change to what Get returned reached the kept render: %q", again[0].GetName())
	}
	if none, ok := k.Get("c2"); !ok || len(none) != 0 {
		t.Errorf("Get(c2) = %v, %v; want no objects, kept", none, ok)
	}

	k.Put("c3", objs)
	k.Only("c3", "c2")
	if _, ok := k.Get("c1"); ok {
		t.Error("Only(c3, c2) kept c1")
	}
	for _, rev := range []string{"c2", "c3"} {
		if _, ok := k.Get(rev); !ok {
			t.Errorf("Only(c3, c2) dropped %s", rev)
		}
	}
}
