package pinbot_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/imagebuild"
)

// TestCIPodTemplate: docs/ci.md's pod template for the Kubernetes plugin
// is a valid Pod (strict: no field Kubernetes does not know), whose
// pinbot container runs this release's -debug image and keeps alive with
// a command the debug image's shell provides.
func TestCIPodTemplate(t *testing.T) {
	doc := string(read(t, "docs/ci.md"))
	_, after, ok := strings.Cut(doc, "### The Kubernetes plugin's pod template")
	if !ok {
		t.Fatal("docs/ci.md has no pod template section")
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("docs/ci.md's pod template section has no YAML block")
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(m[1]), &pod); err != nil {
		t.Fatalf("docs/ci.md's pod template: %s", err)
	}
	version := strings.TrimSpace(string(read(t, "VERSION")))
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "pinbot" })
	if i < 0 {
		t.Fatal("docs/ci.md's pod template has no container pinbot, which the Jenkinsfile's container('pinbot') names")
	}
	c := pod.Spec.Containers[i]
	if !strings.HasSuffix(c.Image, "/pinbot:"+version+"-debug") {
		t.Errorf("the pinbot container runs %s, want this release's -debug image (pinbot:%s-debug)", c.Image, version)
	}
	if len(c.Command) == 0 || !slices.Contains(imagebuild.ShellApplets, c.Command[0]) {
		t.Errorf("the pinbot container's command %q is not one the debug image has (%v)", c.Command, imagebuild.ShellApplets)
	}
	for _, v := range c.VolumeMounts {
		if !slices.ContainsFunc(pod.Spec.Volumes, func(vol corev1.Volume) bool { return vol.Name == v.Name }) {
			t.Errorf("the pinbot container mounts %s, which the pod has no volume of", v.Name)
		}
	}
}

// TestDocsFilesAreMounted: every file a doc's config or command line
// points serve at (tokenFile:, caFile:, --…-file) lies inside a directory
// the chart or deploy/base mounts: a Secret is mounted as a directory, so
// the token is /etc/pinbot/token/token, never /etc/pinbot/token.
func TestDocsFilesAreMounted(t *testing.T) {
	var mounts []string
	for _, f := range []string{"charts/pinbot/templates/deployment.yaml", "deploy/base/serve.yaml"} {
		for _, m := range regexp.MustCompile(`mountPath: (/etc/pinbot/[^,}\s]+)`).FindAllStringSubmatch(string(read(t, f)), -1) {
			mounts = append(mounts, m[1])
		}
	}
	if len(mounts) < 5 {
		t.Fatalf("found %d mounts under /etc/pinbot; the test lost them", len(mounts))
	}
	files := append(userDocs(t), "charts/pinbot/ci/example-values.yaml", "charts/pinbot/ci/verify-only-values.yaml",
		"deploy/overlays/example/reconciler.yaml")
	pointed := regexp.MustCompile(`(?:[A-Za-z]File:|-file[ =])\s*(/etc/pinbot/[^,}\s]+)`)
	checked := 0
	for _, f := range files {
		for _, m := range pointed.FindAllStringSubmatch(string(read(t, f)), -1) {
			checked++
			if !slices.ContainsFunc(mounts, func(dir string) bool { return strings.HasPrefix(m[1], dir+"/") }) {
				t.Errorf("%s points at %s, which is in no directory the chart or deploy/base mounts (%v)", f, m[1], mounts)
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked %d file paths; the test lost them", checked)
	}
}
