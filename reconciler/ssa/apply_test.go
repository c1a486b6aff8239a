package ssa

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": "v"}}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func TestBatches(t *testing.T) {
	cm, ns, crd, dep := obj("v1", "ConfigMap", "a"), obj("v1", "Namespace", "n"),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "w.example.com"), obj("apps/v1", "Deployment", "d")
	names := func(bs [][]*unstructured.Unstructured) [][]string {
		var out [][]string
		for _, b := range bs {
			var n []string
			for _, o := range b {
				n = append(n, o.GetName())
			}
			out = append(out, n)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want [][]string
	}{
		{"namespaces then CRDs then the rest in order", []*unstructured.Unstructured{cm, crd, dep, ns}, [][]string{{"n"}, {"w.example.com"}, {"a", "d"}}},
		{"empty batches dropped", []*unstructured.Unstructured{dep, cm}, [][]string{{"d", "a"}}},
		{"nothing", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(batches(tc.objs))); diff != "" {
				t.Errorf("batches (-want +got):\n%s", diff)
			}
		})
	}
}
