package object

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": "v"}}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func TestStamp(t *testing.T) {
	u := obj("v1", "ConfigMap", "a")
	s, err := Stamp(u, "web")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ConfigHash(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.GetLabels()[LabelApp]; got != "web" {
		t.Errorf("label %s = %q, want web", LabelApp, got)
	}
	if got := s.GetAnnotations()[AnnotationHash]; got != h {
		t.Errorf("annotation %s = %q, want %q", AnnotationHash, got, h)
	}
	if u.GetLabels() != nil || u.GetAnnotations() != nil {
		t.Error("Stamp changed its input")
	}
}
