package deploy

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/render"
)

// helmLabels are the labels the chart adds for Helm's bookkeeping (a
// release's instance, version and chart); deploy/base has no release.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

// TestChartAndBaseAreOneInstall: the chart with only a config (the
// ConfigMap deploy/ makes) and deploy/base run the same serve: the same
// Pod (args, ports, probes, env, mounts, security, resources, grace,
// affinity), the same rollout, the same Service ports and the same
// disruption budget. Only the image (the chart's default pins no digest)
// and Helm's own labels differ.
func TestChartAndBaseAreOneInstall(t *testing.T) {
	charted, err := render.FS(os.DirFS(".."), "charts/pinbot", render.WithHelm(render.Helm{
		ReleaseName: "pinbot", Namespace: stateNamespace,
		Values: map[string]any{"config": map[string]any{"existingConfigMap": "pinbot-config"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	shipped := resources(t, build(t, "base"))
	sameServe(t, shipped, charted, "deploy/base")

	var basePDB, chartPDB policyv1.PodDisruptionBudget
	find(t, shipped, "PodDisruptionBudget", "pinbot", &basePDB)
	find(t, charted, "PodDisruptionBudget", "pinbot", &chartPDB)
	if diff := cmp.Diff(basePDB.Spec, chartPDB.Spec, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the PodDisruptionBudget (-deploy/base +chart):\n%s", diff)
	}
}

// sameServe holds the chart's rendering (charted) to deploy/'s (shipped,
// named so in the diffs): with Helm's labels stripped, the same Pod
// (images aside: the chart's default pins no digest) and the same
// Service. The order of mounts and volumes means nothing: a kustomize
// patch appends where a template inserts.
func sameServe(t *testing.T, shipped, charted []*unstructured.Unstructured, name string) {
	t.Helper()
	for _, objs := range [][]*unstructured.Unstructured{charted, shipped} {
		for _, o := range objs {
			stripHelmLabels(o)
		}
	}
	var base, chart appsv1.Deployment
	find(t, shipped, "Deployment", "pinbot", &base)
	find(t, charted, "Deployment", "pinbot", &chart)
	if len(base.Spec.Template.Spec.Containers) != 1 || len(chart.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container each: %s %d, chart %d", name, len(base.Spec.Template.Spec.Containers), len(chart.Spec.Template.Spec.Containers))
	}
	base.Spec.Template.Spec.Containers[0].Image, chart.Spec.Template.Spec.Containers[0].Image = "", ""
	byName := cmp.Options{cmpopts.SortSlices(func(a, b corev1.VolumeMount) bool { return a.Name < b.Name }),
		cmpopts.SortSlices(func(a, b corev1.Volume) bool { return a.Name < b.Name })}
	if diff := cmp.Diff(base.Spec, chart.Spec, byName); diff != "" {
		t.Errorf("the Deployment (-%s +chart):\n%s", name, diff)
	}
	var baseSvc, chartSvc corev1.Service
	find(t, shipped, "Service", "pinbot", &baseSvc)
	find(t, charted, "Service", "pinbot", &chartSvc)
	if diff := cmp.Diff(baseSvc.Spec, chartSvc.Spec); diff != "" {
		t.Errorf("the Service (-%s +chart):\n%s", name, diff)
	}
}

// stripHelmLabels removes helmLabels wherever an object carries labels or
// selects by them.
func stripHelmLabels(o *unstructured.Unstructured) {
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if k == "labels" || k == "matchLabels" || k == "selector" && o.GetKind() == "Service" {
					if m, ok := child.(map[string]any); ok {
						for _, l := range helmLabels {
							delete(m, l)
						}
					}
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(o.Object)
}
