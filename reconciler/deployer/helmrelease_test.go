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

// TestHelmReleaseOfAGitChart: a chart's directory in a GitRepository
// renders from the repository at the ref it follows, with values files
// read from the repository's root; the deployed chart version names the
// commit only with source-controller's reconcileStrategy Revision.
func TestHelmReleaseOfAGitChart(t *testing.T) {
	h, err := HelmReleaseFrom(mustUnstructured(t, hrHeader+`spec:
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: fleet}
      valuesFiles: [charts/web/values-prod.yaml, envs/prod/values.yaml]
status:
  history: [{status: deployed, chartVersion: 0.3.0+1A2B3C4D5E6F}]
`))
	if err != nil {
		t.Fatal(err)
	}
	kind, ns, name, err := h.ChartSource()
	if err != nil || kind != GitRepositoryKind || ns != "flux-system" || name != "fleet" {
		t.Fatalf("ChartSource = %s %s/%s, %v", kind, ns, name, err)
	}
	repo, err := GitRepositoryFrom(mustUnstructured(t, `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec: {url: "https://gitea.example/platform/fleet.git", ref: {branch: main}}
`))
	if err != nil {
		t.Fatal(err)
	}
	src, err := h.Source(repo)
	if err != nil {
		t.Fatal(err)
	}
	if src.Chart != nil || src.RepoURL != "https://gitea.example/platform/fleet.git" || src.Path != "charts/web" || src.Ref.Branch != "main" {
		t.Errorf("source %+v, want charts/web of the GitRepository's main", src)
	}
	if got := strings.Join(src.Helm.ValueFiles, ","); got != "values-prod.yaml,../../envs/prod/values.yaml" {
		t.Errorf("values files %s, want them relative to the chart", got)
	}
	if src.Helm.ReleaseName != "podinfo" || src.Helm.Namespace != "flux-system" {
		t.Errorf("helm %+v, want the release podinfo in flux-system", src.Helm)
	}
	rev, err := h.Deployed()
	if err != nil || rev.Commit != "1a2b3c4d5e6f" || rev.Version != "0.3.0+1A2B3C4D5E6F" || !rev.Abbreviated() {
		t.Fatalf("Deployed = %+v, %v; want the abbreviated commit of the version", rev, err)
	}
	if !rev.AtHead("1a2b3c4d5e6f0000000000000000000000000000") || rev.AtHead("1a2b3c4d5e6e0000000000000000000000000000") {
		t.Error("AtHead does not compare the abbreviated commit with the head's first digits")
	}

	h.Status.History[0].ChartVersion = "0.3.0"
	if rev, err = h.Deployed(); err != nil || rev.Commit != "" || rev.Version != "0.3.0" {
		t.Errorf("Deployed = %+v, %v; want version 0.3.0 and no commit", rev, err)
	}
	for _, tc := range []struct{ chart, values, field string }{
		{"../web", "", "spec.chart.spec.chart"},
		{".", "", "spec.chart.spec.chart"},
		{"charts/web", "../../x.yaml", "spec.chart.spec.valuesFiles[0]"},
	} {
		h.Spec.Chart.Spec.Chart, h.Spec.Chart.Spec.ValuesFiles = tc.chart, nil
		if tc.values != "" {
			h.Spec.Chart.Spec.ValuesFiles = []string{tc.values}
		}
		var fe *FieldError
		if _, err := h.Source(repo); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("chart %q, values %q: %v, want an error naming %s", tc.chart, tc.values, err, tc.field)
		}
	}
}

func TestHelmReleaseRefusals(t *testing.T) {
	for _, tc := range []struct{ spec, field, want string }{
		{`spec: {chart: {spec: {chart: ./charts/web, sourceRef: {kind: Bucket, name: b}}}}`, "spec.chart.spec.sourceRef.kind", "not of a Bucket"},
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
