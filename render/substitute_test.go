package render

import (
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSubstitute(t *testing.T) {
	files := fstest.MapFS{
		"app/deploy.yaml": {Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: ${replicas:=2}
  template:
    spec:
      containers:
        - {name: app, image: "reg.example/web:${tag}"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: raw
  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
data: {script: "echo ${HOME}"}
`)},
	}
	objs, err := FS(files, "app")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Substitute(objs, map[string]string{"tag": "v7"})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(got[0].Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "reg.example/web:v7" {
		t.Errorf("image = %v, want the tag substituted", img)
	}
	if r, _, _ := unstructured.NestedFieldNoCopy(got[0].Object, "spec", "replicas"); r != int64(2) && r != float64(2) {
		t.Errorf("replicas = %v (%T), want the default 2", r, r)
	}
	if s, _, _ := unstructured.NestedString(got[1].Object, "data", "script"); s != "echo ${HOME}" {
		t.Errorf("an object that opts out was substituted: %q", s)
	}
}
