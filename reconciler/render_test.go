package reconciler

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/render"
)

// TestHelmRenderOptions renders a chart with an app's options: the
// release is named after the app in its namespace unless helm says
// otherwise, values files override each other, values override them and
// parameters everything; a helm block on a directory without Chart.yaml
// is an error naming the directory.
func TestHelmRenderOptions(t *testing.T) {
	root := filetree.Write(t, map[string]string{
		"chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":              "a: chart\nb: chart\nc: chart\nd: chart\n",
		"chart/values-base.yaml":         "b: base\nc: base\nd: base\n",
		"chart/values-prod.yaml":         "c: prod\nd: prod\n",
		"chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\ndata:\n  ns: '{{ .Release.Namespace }}'\n  a: '{{ .Values.a }}'\n  b: '{{ .Values.b }}'\n  c: '{{ .Values.c }}'\n  d: '{{ .Values.d }}'\n  count: '{{ .Values.count }}'\n",
		"plain/configmap.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	})
	for _, tc := range []struct {
		name string
		helm *config.HelmConfig
		want map[string]any // the ConfigMap's name and data
	}{
		{"no helm block: the app's release and namespace, the chart's values", nil,
			map[string]any{"name": "web-app", "ns": "prod", "a": "chart", "b": "chart", "c": "chart", "d": "chart", "count": ""}},
		{"values files, values, parameters",
			&config.HelmConfig{ReleaseName: "web-prod", ValueFiles: []string{"values-base.yaml", "values-prod.yaml"}, Values: map[string]any{"d": "values", "count": 3},
				Parameters: []config.HelmParameter{{Name: "a", Value: "1,2", ForceString: true}}},
			map[string]any{"name": "web-prod", "ns": "prod", "a": "1,2", "b": "base", "c": "prod", "d": "values", "count": "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &config.App{Name: "web-app", Namespace: "prod", Helm: tc.helm}
			objs, err := render.FS(os.DirFS(root), "chart", renderOptions(app)...)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 {
				t.Fatalf("rendered %q", fixture.Names(objs))
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
	app := &config.App{Name: "web", Namespace: "prod", Helm: &config.HelmConfig{ReleaseName: "web"}}
	if _, err := render.FS(os.DirFS(root), "plain", renderOptions(app)...); err == nil || !strings.Contains(err.Error(), "render: plain: helm settings given, but the directory holds no Chart.yaml") {
		t.Errorf("helm block on a plain directory: %v", err)
	}
	plain := &config.App{Name: "web", Namespace: "prod"}
	if objs, err := render.FS(os.DirFS(root), "plain", renderOptions(plain)...); err != nil || len(objs) != 1 {
		t.Errorf("plain directory without a helm block: %q, %v", fixture.Names(objs), err)
	}
}
