package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
