package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/testenv/filetree"
)

// webChart is a chart with a committed dependency, CRDs, hooks of every
// kind that matters and templates reading values, the release and the
// cluster's capabilities.
func webChart() map[string]string {
	return map[string]string{
		"charts/web/Chart.yaml": `apiVersion: v2
name: web
version: 1.0.0
kubeVersion: ">=1.30.0-0"
dependencies:
  - name: cache
    version: 0.1.0
    repository: https://charts.example/stable
    condition: cache.enabled
`,
		"charts/web/values.yaml": `replicaCount: 1
image: {repository: r.example/web, digest: ""}
env: dev
cache: {enabled: true, size: small}
`,
		"charts/web/values-prod.yaml": "replicaCount: 2\nenv: prod\n",
		"charts/web/values-eu.yaml":   "replicaCount: 4\nregion: eu\n",
		"charts/web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
  annotations:
    kube-version: {{ .Capabilities.KubeVersion.Version | quote }}
    has-widgets: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
    env: {{ .Values.env }}
    region: {{ .Values.region | default "none" }}
    found: {{ (lookup "v1" "Secret" "default" "anything") | len | quote }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
`,
		"charts/web/templates/NOTES.txt": "Thanks for installing {{ .Release.Name }}.\n",
		"charts/web/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"}]
`,
		"charts/web/templates/smoke.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-smoke
  annotations: {helm.sh/hook: post-install}
`,
		"charts/web/templates/test.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {helm.sh/hook: test}
spec: {containers: [{name: t, image: busybox}]}
`,
		"charts/web/templates/delete.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-goodbye
  annotations: {helm.sh/hook: pre-delete}
`,
		"charts/web/crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
`,
		"charts/web/charts/cache/Chart.yaml":  "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"charts/web/charts/cache/values.yaml": "size: tiny\n",
		"charts/web/charts/cache/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-cache}
data: {size: {{ .Values.size | quote }}}
`,
	}
}

// byName indexes objects by "Kind name".
func byName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+" "+o.GetName()] = o
	}
	return m
}

var cluster = Capabilities{KubeVersion: "v1.34.2", APIVersions: []string{"v1", "apps/v1", "example.com/v1", "example.com/v1/Widget"}}

func TestDirHelm(t *testing.T) {
	root := filetree.Write(t, webChart())
	got, err := FS(dirFS(t, root), "charts/web", WithCapabilities(cluster), WithHelm(Helm{
		ReleaseName: "shop",
		Namespace:   "prod",
		ValueFiles:  []string{"values-prod.yaml", "values-eu.yaml"},
		Values:      map[string]any{"replicaCount": 3, "cache": map[string]any{"size": "large"}},
		Parameters:  []Parameter{{Name: "image.digest", Value: digestA}, {Name: "env", Value: "prod,eu", ForceString: true}},
	}))
	if err != nil {
		t.Fatalf("Dir: %s", err)
	}
	want := []string{
		"CustomResourceDefinition widgets.example.com", // crds/ first
		"Job shop-migrate", // pre-install hook, annotations kept
		"ConfigMap shop-cache",
		"Deployment prod/shop",
		"ConfigMap shop-smoke", // post-install hook
	}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	objs := byName(got)
	deploy := objs["Deployment shop"]
	wantAnn := map[string]string{
		"kube-version": "v1.34.2", // from the cluster, not Helm's v1.20 test default
		"has-widgets":  "true",
		"env":          "prod,eu", // a parameter beats the value files, commas kept
		"region":       "eu",      // the later values file adds
		"found":        "0",       // lookup renders empty
	}
	if diff := cmp.Diff(wantAnn, deploy.GetAnnotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if deploy.GetNamespace() != "prod" {
		t.Errorf("namespace = %q, want the release namespace prod", deploy.GetNamespace())
	}
	// Inline values beat the values files, which beat values.yaml.
	if n, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %d, want 3 from the inline values", n)
	}
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if image := containers[0].(map[string]any)["image"]; image != "r.example/web@"+digestA {
		t.Errorf("image = %v, want the digest set by the parameter", image)
	}
	if size, _, _ := unstructured.NestedString(objs["ConfigMap shop-cache"].Object, "data", "size"); size != "large" {
		t.Errorf("the dependency's size = %q, want large from the parent's values", size)
	}
	if hook := objs["Job shop-migrate"].GetAnnotations()["helm.sh/hook"]; hook != "pre-install,pre-upgrade" {
		t.Errorf("hook annotation = %q, want it kept for the waves", hook)
	}
}

func TestDirHelmDefaults(t *testing.T) {
	files := webChart()
	files["charts/web/Chart.yaml"] = strings.Replace(files["charts/web/Chart.yaml"], `kubeVersion: ">=1.30.0-0"`, "", 1)
	files["charts/web/values.yaml"] = strings.Replace(files["charts/web/values.yaml"], "enabled: true", "enabled: false", 1)
	got, err := FS(dirFS(t, filetree.Write(t, files)), "charts/web")
	if err != nil {
		t.Fatalf("Dir: %s", err)
	}
	objs := byName(got)
	if objs["ConfigMap web-cache"] != nil {
		t.Error("the dependency rendered though its condition is false")
	}
	d := objs["Deployment web"]
	if d == nil {
		t.Fatalf("no Deployment web (release named after the directory) in %v", names(got))
	}
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 1 || d.GetNamespace() != "default" {
		t.Errorf("replicas %d in %q, want the chart's default 1 in default", n, d.GetNamespace())
	}
}

func TestDirHelmErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(map[string]string)
		helm   *Helm
		caps   *Capabilities
		want   string
		file   string
		line   int
	}{
		{name: "dependency not committed", change: func(f map[string]string) {
			for k := range f {
				if strings.HasPrefix(k, "charts/web/charts/") {
					delete(f, k)
				}
			}
		}, want: `helm chart "web": dependency "cache" (https://charts.example/stable) is not in charts/`, file: "charts/web"},
		{name: "template error", change: func(f map[string]string) {
			f["charts/web/templates/bad.yaml"] = "a: b\nname: {{ .Values.nope.deeper }}\n"
		}, want: `helm chart "web"`, file: "charts/web/templates/bad.yaml", line: 2},
		{name: "kubeVersion under Helm's test default", caps: &Capabilities{},
			want: "chart requires kubeVersion >=1.30.0-0, the cluster runs v1.20", file: "charts/web"},
		{name: "values file outside the repository", helm: &Helm{ValueFiles: []string{"../../../etc/passwd"}},
			want: `values file "../../../etc/passwd" is outside the repository`, file: "charts/web"},
		{name: "missing values file", helm: &Helm{ValueFiles: []string{"values-nope.yaml"}},
			want: "values file not found", file: "charts/web/values-nope.yaml"},
		{name: "bad values file", change: func(f map[string]string) { f["charts/web/values-bad.yaml"] = "a: b\nc: [\n" },
			helm: &Helm{ValueFiles: []string{"values-bad.yaml"}}, want: "values file:", file: "charts/web/values-bad.yaml"},
		{name: "bad parameter", helm: &Helm{Parameters: []Parameter{{Name: "a[-1]", Value: "1"}}},
			want: `helm parameter "a[-1]"`, file: "charts/web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := webChart()
			if tc.change != nil {
				tc.change(files)
			}
			opts := []Option{WithCapabilities(cluster)}
			if tc.caps != nil {
				opts = []Option{WithCapabilities(*tc.caps)}
			}
			if tc.helm != nil {
				opts = append(opts, WithHelm(*tc.helm))
			}
			_, err := FS(dirFS(t, filetree.Write(t, files)), "charts/web", opts...)
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("Dir error = %v, want an *Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) || re.File != tc.file || re.Line != tc.line {
				t.Errorf("Dir error = %q (file %q line %d), want it to contain %q, file %q line %d", err, re.File, re.Line, tc.want, tc.file, tc.line)
			}
		})
	}
}

func TestDirHelmSymlinkOutOfRepo(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n"})
	root := filetree.Write(t, map[string]string{"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n"})
	if err := os.MkdirAll(filepath.Join(root, "app", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "app", "templates", "s.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := FS(dirFS(t, root), "app")
	if err == nil || !strings.Contains(err.Error(), "app/templates/s.yaml: not a regular file: pinbot follows no link in a repository") {
		t.Errorf("Dir error = %v, want a refusal of the symlink", err)
	}
}

func TestDirHelmSettingsWithoutChart(t *testing.T) {
	root := filetree.Write(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
	_, err := FS(dirFS(t, root), "app", WithHelm(Helm{ReleaseName: "x"}))
	if err == nil || !strings.Contains(err.Error(), "no Chart.yaml") {
		t.Errorf("Dir error = %v, want a refusal of helm settings on a plain directory", err)
	}
}

func TestDirWithDiscovery(t *testing.T) {
	root := filetree.Write(t, map[string]string{
		"plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
	})
	calls := 0
	discover := func() (Capabilities, error) { calls++; return cluster, nil }
	if _, err := FS(dirFS(t, root), "plain", WithDiscovery(discover)); err != nil {
		t.Fatalf("Dir(plain): %s", err)
	}
	if calls != 0 {
		t.Errorf("discovery called %d times for a plain directory, want 0", calls)
	}

	root = filetree.Write(t, webChart())
	got, err := FS(dirFS(t, root), "charts/web", WithDiscovery(discover))
	if err != nil {
		t.Fatalf("Dir(chart): %s", err)
	}
	if calls != 1 {
		t.Errorf("discovery called %d times for a chart, want 1", calls)
	}
	if kv := byName(got)["Deployment web"].GetAnnotations()["kube-version"]; kv != "v1.34.2" {
		t.Errorf("kube-version = %q, want the discovered v1.34.2", kv)
	}

	down := errors.New("the API server is not answering")
	_, err = FS(dirFS(t, root), "charts/web", WithDiscovery(func() (Capabilities, error) { return Capabilities{}, down }))
	if !errors.Is(err, down) || !strings.Contains(err.Error(), `helm chart "web"`) {
		t.Errorf("Dir with failing discovery = %v, want the discovery error naming the chart", err)
	}
}

func TestChartVersion(t *testing.T) {
	fsys := fstest.MapFS{
		"charts/web/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: web\nversion: 1.2.3\n")},
		"charts/bare/Chart.yaml": {Data: []byte("apiVersion: v2\nname: bare\n")},
		"charts/bad/Chart.yaml":  {Data: []byte("version: [\n")},
	}
	if v, err := ChartVersion(fsys, "charts/web"); err != nil || v != "1.2.3" {
		t.Errorf("ChartVersion = %q, %v; want 1.2.3", v, err)
	}
	for _, dir := range []string{"charts/bare", "charts/bad", "charts/none"} {
		if _, err := ChartVersion(fsys, dir); err == nil || !strings.Contains(err.Error(), dir+"/Chart.yaml") {
			t.Errorf("ChartVersion(%s) = %v, want an error naming its Chart.yaml", dir, err)
		}
	}
}
