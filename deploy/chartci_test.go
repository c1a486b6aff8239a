package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/render"
)

// ciValues are the chart's example value files, as the docs install them.
func ciValues(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../charts/pinbot/ci/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("charts/pinbot/ci holds %d value files (%v)", len(files), err)
	}
	for i, f := range files {
		files[i] = "ci/" + filepath.Base(f)
	}
	return files
}

// TestChartLintsStrict: the real helm lint --strict passes the chart with
// every example value file, warnings included.
func TestChartLintsStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: runs bin/argocd-path/helm (make renderers)")
	}
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, values := range ciValues(t) {
		out, err := exec.Command(filepath.Join(bin, "argocd-path", "helm"), "lint", "--strict", "../charts/pinbot", "-f", "../charts/pinbot/"+values).CombinedOutput()
		if err != nil || strings.Contains(string(out), "[WARNING]") {
			t.Errorf("helm lint --strict -f %s: %v\n%s", values, err, out)
		}
	}
}

// TestChartWithoutOptionalCRDs: every example renders on a cluster
// without the Prometheus Operator's CRDs, leaving out the ServiceMonitor
// and PrometheusRule it asks for and saying so in NOTES; where the CRDs
// are, both render.
func TestChartWithoutOptionalCRDs(t *testing.T) {
	for _, values := range ciValues(t) {
		for _, tc := range []struct {
			name string
			apis []string
			want bool
		}{
			{"no CRDs", nil, false},
			{"Prometheus Operator", []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}, true},
		} {
			objs, err := render.FS(os.DirFS(".."), "charts/pinbot",
				render.WithHelm(render.Helm{ReleaseName: "pinbot", Namespace: stateNamespace, ValueFiles: []string{values},
					Parameters: []render.Parameter{{Name: "serviceMonitor.enabled", Value: "true"}, {Name: "prometheusRule.enabled", Value: "true"}}}),
				render.WithCapabilities(render.Capabilities{KubeVersion: "v1.37.2", APIVersions: tc.apis}))
			if err != nil {
				t.Errorf("%s, %s: %s", values, tc.name, err)
				continue
			}
			for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
				if got := hasKind(objs, kind); got != tc.want {
					t.Errorf("%s, %s: renders a %s: %t, want %t", values, tc.name, kind, got, tc.want)
				}
			}
		}
	}
}

func hasKind(objs []*unstructured.Unstructured, kind string) bool {
	for _, o := range objs {
		if o.GetKind() == kind {
			return true
		}
	}
	return false
}

// TestPrometheusRuleNamesRealMetrics: every metric an alert queries is
// one pinbot exports (a literal pinbot_… name in its non-test code).
func TestPrometheusRuleNamesRealMetrics(t *testing.T) {
	rule, err := os.ReadFile("../charts/pinbot/templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	literal := regexp.MustCompile(`"(pinbot_[a-z_]+)"`)
	err = filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != ".." && (d.Name() == "bin" || d.Name() == "hack" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(p)
		for _, m := range literal.FindAllSubmatch(b, -1) {
			exported[string(m[1])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	queried := regexp.MustCompile(`expr: .*`).FindAllString(string(rule), -1)
	if len(queried) < 5 {
		t.Fatalf("the PrometheusRule has %d alerts; the test lost them", len(queried))
	}
	for _, expr := range queried {
		for _, m := range regexp.MustCompile(`\bpinbot_[a-z_]+`).FindAllString(expr, -1) {
			if !exported[m] {
				t.Errorf("the PrometheusRule's %q queries %s, which pinbot does not export", expr, m)
			}
		}
	}
}
