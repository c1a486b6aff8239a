package pinbot_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/imagebuild"
	"pinbot.dev/pinbot/internal/testenv/snippets"
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

// ciSteps runs ci.md's Jenkins sh step and its Gitea Actions promote
// step, each with a build of its own pushed to Gitea's registry, and
// checks each opened (or updated) the promotion pull request.
func (u *reader) ciSteps(ctx context.Context, blocks []snippets.Block, ran map[string]bool) {
	u.t.Helper()
	var jenkins, workflow *snippets.Block
	for i, b := range blocks {
		switch {
		case b.Lang == "groovy" && strings.Contains(b.Text, "pinbot promote"):
			jenkins = &blocks[i]
		case b.Lang == "yaml" && strings.Contains(b.Text, "pinbot promote"):
			workflow = &blocks[i]
		}
	}
	if jenkins == nil || workflow == nil {
		u.t.Fatal("docs/ci.md lacks its Jenkinsfile or its workflow running pinbot promote")
	}
	// The agent's pod trusts the private CA, as ci.md's SSL_CERT_FILE says.
	ci := []string{"PINBOT_GITEA_TOKEN=" + u.srv.Token, "SSL_CERT_FILE=" + u.file("ca.pem"), "CURL_CA_BUNDLE=" + u.file("ca.pem")}

	// Jenkins: Kaniko wrote image.txt; the Promote stage's sh runs.
	built, err := u.srv.PushRandomImage(u.host + "/platform/web:jenkins")
	if err != nil {
		u.t.Fatal(err)
	}
	u.write(u.file("image.txt"), u.host+"/platform/web:jenkins@"+built+"\n")
	var promote string
	for _, sh := range snippets.GroovySh(*jenkins) {
		if strings.Contains(sh, "pinbot promote") {
			promote = sh
		}
	}
	u.run(ctx, snippets.Block{File: jenkins.File, Line: jenkins.Line, Text: promote}, &userCluster{env: ci})
	data, err := os.ReadFile(u.file("promotion.json"))
	if err != nil {
		u.t.Fatal(err)
	}
	jenkinsPR := promotedPull(u.t, "the Jenkins step's promotion.json", data)
	ran[jenkins.String()] = true

	// Gitea Actions: the release's archive and checksums, published as a
	// Gitea release of platform/pinbot, which the step downloads; buildx
	// wrote meta.json.
	u.publishRelease(ctx)
	built, err = u.srv.PushRandomImage(u.host + "/platform/web:actions")
	if err != nil {
		u.t.Fatal(err)
	}
	u.write(u.file("meta.json"), `{"containerimage.digest": "`+built+`", "image.name": "`+u.host+`/platform/web:actions"}`)
	run, err := snippets.WorkflowRun(*workflow, "promote")
	if err != nil {
		u.t.Fatal(err)
	}
	out := u.run(ctx, snippets.Block{File: workflow.File, Line: workflow.Line, Text: run}, &userCluster{env: ci})
	// The step's output is sha256sum's line, then promote's JSON.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if pr := promotedPull(u.t, "the Actions step's output", []byte(lines[len(lines)-1])); pr != jenkinsPR {
		u.t.Errorf("the Actions step's promotion is pull request %s, want the one the Jenkins step opened, %s, updated", pr, jenkinsPR)
	}
	ran[workflow.String()] = true
}

// promotedPull is the pull request URL of promote -o json's output.
func promotedPull(t *testing.T, what string, data []byte) string {
	t.Helper()
	var result struct {
		PRURL string `json:"prURL"`
	}
	if err := json.Unmarshal(data, &result); err != nil || result.PRURL == "" {
		t.Fatalf("%s (%v): %s; want its pull request", what, err, data)
	}
	return result.PRURL
}

// publishRelease makes the Gitea release platform/pinbot VERSION, holding
// the linux/amd64 archive and checksums.txt make release wrote.
func (u *reader) publishRelease(ctx context.Context) {
	u.t.Helper()
	version := strings.TrimSpace(string(read(u.t, "VERSION")))
	if _, err := u.srv.CreateRepoWith(ctx, "platform", "pinbot", "main", map[string]string{"README.md": "pinbot\n"}); err != nil {
		u.t.Fatal(err)
	}
	client, err := u.srv.Client(ctx)
	if err != nil {
		u.t.Fatal(err)
	}
	rel, _, err := client.CreateRelease("platform", "pinbot", gitea.CreateReleaseOption{TagName: version, Target: "main", Title: version})
	if err != nil {
		u.t.Fatal(err)
	}
	dist := filepath.Join(u.clone, "dist", version)
	for _, f := range []string{"pinbot_" + version + "_linux_amd64.tar.gz", "checksums.txt"} {
		file, err := os.Open(filepath.Join(dist, f))
		if err != nil {
			u.t.Fatal(err)
		}
		_, _, err = client.CreateReleaseAttachment("platform", "pinbot", rel.ID, file, f)
		file.Close()
		if err != nil {
			u.t.Fatalf("attaching %s: %s", f, err)
		}
	}
}
