package reconciler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/render"
)

func TestParseHelm(t *testing.T) {
	config := `apps:
  - name: web
    repo: https://g.example/o/r.git
    path: charts/web
    namespace: prod
    helm:
      releaseName: web-prod
      valueFiles: [values-base.yaml, values-prod.yaml]
      values: {replicaCount: 3, image: {tag: v1}}
      parameters: [{name: image.tag, value: "1.10", forceString: true}, {name: debug, value: "true"}]
  - {name: api, repo: 'https://g.example/o/r.git', path: charts/api, namespace: api}
`
	c, err := Parse("c.yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	want := &HelmConfig{
		ReleaseName: "web-prod",
		ValueFiles:  []string{"values-base.yaml", "values-prod.yaml"},
		Values:      map[string]any{"replicaCount": 3, "image": map[string]any{"tag": "v1"}},
		Parameters:  []HelmParameter{{Name: "image.tag", Value: "1.10", ForceString: true}, {Name: "debug", Value: "true"}},
	}
	if diff := cmp.Diff(want, c.Apps[0].Helm); diff != "" {
		t.Errorf("helm (-want +got):\n%s", diff)
	}
	if c.Apps[1].Helm != nil {
		t.Errorf("app without a helm block: %+v", c.Apps[1].Helm)
	}
}

func TestParseHelmErrors(t *testing.T) {
	head := "apps:\n  - name: web\n    repo: https://g.example/o/r.git\n    namespace: web\n"
	for _, tc := range []struct {
		name, helm string
		want       []string
	}{
		{"unknown field", "    helm:\n      releaseNmae: web\n", []string{`c.yaml:6: unknown field "releaseNmae"`}},
		{"unknown parameter field", "    helm:\n      parameters:\n        - {name: a, val: b}\n", []string{`c.yaml:7: unknown field "val"`}},
		{"bad release name", "    helm: {releaseName: Web_Prod}\n", []string{`c.yaml:2: app "web": helm.releaseName "Web_Prod": want a Helm release name`}},
		{"long release name", "    helm: {releaseName: " + strings.Repeat("a", 54) + "}\n", []string{`helm.releaseName "aaaa`, "at most 53 characters"}},
		{"absolute values file", "    helm: {valueFiles: [/etc/values.yaml]}\n", []string{`c.yaml:2: app "web": helm.valueFiles: "/etc/values.yaml": want a slash path relative to the chart`}},
		{"nameless parameter", "    helm: {parameters: [{value: x}]}\n", []string{`c.yaml:2: app "web": helm.parameters[0]: want a name`}},
		{"values not a mapping", "    helm: {values: [1, 2]}\n", []string{"c.yaml:5:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(head+tc.helm))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestHelmRenderOptions renders a chart with an app's options: the
// release is named after the app in its namespace unless helm says
// otherwise, values files override each other, values override them and
// parameters everything; a helm block on a directory without Chart.yaml
// is an error naming the directory.
func TestHelmRenderOptions(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":              "a: chart\nb: chart\nc: chart\nd: chart\n",
		"chart/values-base.yaml":         "b: base\nc: base\nd: base\n",
		"chart/values-prod.yaml":         "c: prod\nd: prod\n",
		"chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\ndata:\n  ns: '{{ .Release.Namespace }}'\n  a: '{{ .Values.a }}'\n  b: '{{ .Values.b }}'\n  c: '{{ .Values.c }}'\n  d: '{{ .Values.d }}'\n  count: '{{ .Values.count }}'\n",
		"plain/configmap.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		helm *HelmConfig
		want map[string]any // the ConfigMap's name and data
	}{
		{"no helm block: the app's release and namespace, the chart's values", nil,
			map[string]any{"name": "web-app", "ns": "prod", "a": "chart", "b": "chart", "c": "chart", "d": "chart", "count": ""}},
		{"values files, values, parameters",
			&HelmConfig{ReleaseName: "web-prod", ValueFiles: []string{"values-base.yaml", "values-prod.yaml"}, Values: map[string]any{"d": "values", "count": 3},
				Parameters: []HelmParameter{{Name: "a", Value: "1,2", ForceString: true}}},
			map[string]any{"name": "web-prod", "ns": "prod", "a": "1,2", "b": "base", "c": "prod", "d": "values", "count": "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &App{Name: "web-app", Namespace: "prod", Helm: tc.helm}
			objs, err := render.Dir(root, "chart", app.renderOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 {
				t.Fatalf("rendered %q", names(objs))
			}
			got := map[string]any{"name": objs[0].GetName()}
			data, _ := objs[0].Object["data"].(map[string]any)
			for k, v := range data {
				got[k] = v
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
		})
	}
	app := &App{Name: "web", Namespace: "prod", Helm: &HelmConfig{ReleaseName: "web"}}
	if _, err := render.Dir(root, "plain", app.renderOptions()...); err == nil || !strings.Contains(err.Error(), "render: plain: helm settings given, but the directory holds no Chart.yaml") {
		t.Errorf("helm block on a plain directory: %v", err)
	}
	plain := &App{Name: "web", Namespace: "prod"}
	if objs, err := render.Dir(root, "plain", plain.renderOptions()...); err != nil || len(objs) != 1 {
		t.Errorf("plain directory without a helm block: %q, %v", names(objs), err)
	}
}
