package render

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const overridesDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: app, image: "reg.example/web:v1"}
`

func TestOverrides(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	overrides := map[string]any{
		"images":     []any{map[string]any{"name": "reg.example/web", "newName": "mirror.example/web", "digest": digest}},
		"namePrefix": "prod-",
		"replicas":   []any{map[string]any{"name": "web", "count": 3}},
		"patches": []any{map[string]any{
			"patch":  `[{"op": "add", "path": "/metadata/annotations", "value": {"patched": "yes"}}]`,
			"target": map[string]any{"kind": "Deployment"},
		}},
	}
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
	}{
		{"a plain directory", fstest.MapFS{"app/deploy.yaml": {Data: []byte(overridesDeployment)}, "app/.hidden/x.yaml": {Data: []byte("not: read")}}},
		{"a kustomization", fstest.MapFS{
			"app/kustomization.yaml": {Data: []byte("resources: [deploy.yaml]\nnamespace: web\n")},
			"app/deploy.yaml":        {Data: []byte(overridesDeployment)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := FS(tc.files, "app", WithOverrides(overrides))
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 {
				t.Fatalf("%d objects, want 1", len(objs))
			}
			u := objs[0]
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			got := []any{u.GetName(), containers[0].(map[string]any)["image"], replicas, u.GetAnnotations()["patched"]}
			want := []any{"prod-web", "mirror.example/web@" + digest, int64(3), "yes"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverridesErrors(t *testing.T) {
	chart := fstest.MapFS{"app/Chart.yaml": {Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")}}
	if _, err := FS(chart, "app", WithOverrides(map[string]any{"namePrefix": "x-"})); err == nil || !strings.Contains(err.Error(), "holds a Helm chart") {
		t.Errorf("overrides on a chart: %v", err)
	}
	plain := fstest.MapFS{"app/deploy.yaml": {Data: []byte(overridesDeployment)}}
	if _, err := FS(plain, "app", WithOverrides(map[string]any{"replicas": "three"})); err == nil || !strings.Contains(err.Error(), "the deployer's overrides") {
		t.Errorf("bad overrides: %v", err)
	}
}
