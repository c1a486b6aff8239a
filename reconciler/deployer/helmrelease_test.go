package deployer

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

func mustUnstructured(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const hrHeader = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: flux-system, generation: 2}
`

func TestHelmReleaseSources(t *testing.T) {
	h, err := HelmReleaseFrom(mustUnstructured(t, hrHeader+`spec:
  targetNamespace: web
  chart: {spec: {chart: podinfo, sourceRef: {kind: HelmRepository, name: charts}, valuesFiles: [values-prod.yaml]}}
  values: {replicaCount: 2}
  valuesFrom: [{kind: Secret, name: creds, valuesKey: v.yaml, optional: true}]
  kubeConfig: {secretRef: {name: spoke}}
status:
  observedGeneration: 2
  history:
  - {status: failed, chartVersion: 6.1.0}
  - {status: deployed, chartVersion: 6.0.1}
  conditions: [{type: Ready, status: "True", observedGeneration: 2}]
`))
	if err != nil {
		t.Fatal(err)
	}
	kind, ns, name, err := h.ChartSource()
	if err != nil || kind != HelmRepositoryKind || ns != "flux-system" || name != "charts" {
		t.Fatalf("ChartSource = %s %s/%s, %v", kind, ns, name, err)
	}
	repo, err := HelmRepositoryFrom(mustUnstructured(t, `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {url: "https://ghcr.io/stefanprodan/charts", type: oci}
`))
	if err != nil {
		t.Fatal(err)
	}
	src, err := h.Source(repo)
	if err != nil {
		t.Fatal(err)
	}
	c := src.Chart
	if c == nil || c.RepoURL != "oci://ghcr.io/stefanprodan/charts" || c.Name != "podinfo" || c.Version != "*" {
		t.Errorf("chart %+v, want podinfo * of oci://ghcr.io/stefanprodan/charts", c)
	}
	hm := src.Helm
	if hm.ReleaseName != "web-podinfo" || hm.Namespace != "web" || src.Namespace != "web" || hm.Values["replicaCount"] != float64(2) ||
		len(hm.ValuesFrom) != 1 || hm.ValuesNamespace != "flux-system" || len(hm.ValueFiles) != 1 {
		t.Errorf("helm %+v, want release web-podinfo in web with the values, valuesFrom and values files", hm)
	}
	if src.Cluster == nil || src.Cluster.KubeConfig == nil || src.Cluster.KubeConfig.Name != "spoke" {
		t.Errorf("cluster %+v, want the kubeConfig Secret spoke", src.Cluster)
	}
	rev, err := h.Deployed()
	if err != nil || rev.Commit != "6.0.1" {
		t.Errorf("Deployed = %+v, %v; want the newest deployed release's 6.0.1", rev, err)
	}
	if hh := h.Health(); !hh.Healthy {
		t.Errorf("Health = %+v, want healthy", hh)
	}

	// An OCIRepository chartRef.
	h2, err := HelmReleaseFrom(mustUnstructured(t, hrHeader+`spec: {chartRef: {kind: OCIRepository, name: podinfo}}`))
	if err != nil {
		t.Fatal(err)
	}
	oci, err := OCIRepositoryFrom(mustUnstructured(t, `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: podinfo, namespace: flux-system}
spec: {url: "oci://ghcr.io/stefanprodan/charts/podinfo", ref: {tag: 6.5.0}}
`))
	if err != nil {
		t.Fatal(err)
	}
	src, err = h2.Source(oci)
	if err != nil || src.Chart.RepoURL != "oci://ghcr.io/stefanprodan/charts" || src.Chart.Name != "podinfo" || src.Chart.Version != "6.5.0" || src.Helm.ReleaseName != "podinfo" {
		t.Errorf("OCIRepository source = %+v (%+v), %v", src, src.Chart, err)
	}
	if _, err := h2.Deployed(); !errors.Is(err, ErrNotDeployed) {
		t.Errorf("Deployed with no history = %v, want ErrNotDeployed", err)
	}
}

func TestHelmReleaseRefusals(t *testing.T) {
	for _, tc := range []struct{ spec, field, want string }{
		{`spec: {chart: {spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: repo}}}}`, "spec.chart.spec.sourceRef.kind", "not of a GitRepository"},
		{`spec: {chartRef: {kind: HelmChart, name: web}}`, "spec.chartRef.kind", "not of a HelmChart"},
		{`spec: {}`, "spec.chart", "names no chart"},
	} {
		h, err := HelmReleaseFrom(mustUnstructured(t, hrHeader+tc.spec))
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, err = h.ChartSource()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) || fe.Object != "HelmRelease flux-system/podinfo" {
			t.Errorf("%s: ChartSource error %v, want %s saying %q", tc.spec, err, tc.field, tc.want)
		}
	}
	h, _ := HelmReleaseFrom(mustUnstructured(t, hrHeader+`spec: {chartRef: {kind: OCIRepository, name: p}, postRenderers: [{kustomize: {}}]}`))
	if _, err := h.Source(&OCIRepository{}); err == nil || !strings.Contains(err.Error(), "spec.postRenderers") {
		t.Errorf("post-renderers: %v, want them refused", err)
	}
}
