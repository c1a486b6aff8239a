package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/stack"
)

func TestReconcilerCommandErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	app := "apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"
	if err := os.WriteFile(good, []byte(app), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("apps:\n  - name: web\n    repo: http://127.0.0.1:1/o/r.git\n    namespace: web\n    prun: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", dir) // no ~/.kube/config
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"verify", "web", "--kubeconfig", filepath.Join(dir, "none")}, exitUsage, "no config file given, and no cluster to read pinbot serve's from"},
		{[]string{"reconcile"}, exitUsage, "flag --config: required"},
		{[]string{"verify", "web", "--config", good, "--timeout", "1m"}, exitUsage, "flag --timeout: want a positive duration, with --wait"},
		{[]string{"verify", "web", "--config", good, "--wait", "--timeout", "0s"}, exitUsage, "flag --timeout"},
		{[]string{"verify"}, exitUsage, "accepts 1 arg"},
		{[]string{"status", "a", "b", "--config", good}, exitUsage, "accepts at most 1 arg"},
		{[]string{"sync", "web", "--config", good, "--wait", "-1s"}, exitUsage, "flag --wait"},
		{[]string{"verify", "web", "--config", bad}, exitUsage, `bad.yaml:5: unknown field "prun"`},
		{[]string{"verify", "api", "--config", good}, exitUsage, `no app "api" (apps: web)`},
		{[]string{"history", "api", "--config", good}, exitUsage, `no app "api"`},
		{[]string{"status", "api", "--config", good}, exitUsage, `no app "api"`},
		{[]string{"verify", "web", "--config", good, "--kubeconfig", filepath.Join(dir, "nope")}, exitUsage, "loading kubeconfig"},
		{[]string{"history", "web", "--config", good}, exitError, "no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config), and not running in a cluster"},
		{[]string{"verify", "web", "--config", good, "--context", "nope"}, exitUsage, `flag --context "nope"`},
		{[]string{"reconcile", "--config", filepath.Join(dir, "missing.yaml")}, exitError, "reading config"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// TestReconcilerCommands drives sync, verify, status and history against
// a real control plane, Gitea (Git, API and registry) and a simulated node.
func TestReconcilerCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peers, err := stack.Start(ctx, stack.Options{Namespaces: []string{"pinbot-system", "web"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	g, c := peers.Gitea, peers.Cluster

	// The image, in Gitea's registry; pinbot reads it with the docker
	// config's credentials.
	dockerDir, err := g.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dockerDir)
	t.Setenv("PINBOT_GITEA_TOKEN", g.Token)
	repo := g.RegistryHost + "/" + g.AdminUser + "/web"
	digest, err := g.PushRandomImage(repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	pinned := repo + ":v1@" + digest

	src := t.TempDir()
	manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: %q}]
`, pinned)
	if err := os.MkdirAll(filepath.Join(src, "envs", "prod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "envs", "prod", "web.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	commit, err := g.CreateRepoFromDir(ctx, g.AdminUser, "manifests", "main", src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	config := fmt.Sprintf(`interval: 60s
forge: {url: %q}
apps:
  - name: web
    repo: %s
    branch: main
    path: envs/prod
    namespace: web
    allowNamespaces: [web]
    syncPolicy: {automated: false, selfHeal: false, prune: false, allowEmpty: false}
`, g.URL, g.RepoURL(g.AdminUser, "manifests"))
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--config", cfg, "--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir()}
	pinbot := func(args ...string) (int, string, string) {
		return run(t, append(args, common...)...)
	}

	// Detect only: nothing applied yet, so not verified (exit 1).
	code, out, stderr := pinbot("status", "web", "-o", "json")
	var st struct{ Sync, Health, Commit string }
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitOK || st.Sync != "OutOfSync" || st.Health != "Missing" || st.Commit != commit {
		t.Fatalf("status before sync: exit %d, %s %s %v", code, out, stderr, err)
	}
	if code, out, _ := pinbot("verify", "web", "-o", "json"); code != exitError || !strings.Contains(out, `"verified":false`) {
		t.Errorf("verify before sync: exit %d, %s", code, out)
	}

	// verify --wait gives up at --timeout, unverified.
	began := time.Now()
	if code, out, stderr := pinbot("verify", "web", "--wait", "--timeout", "2s"); code != exitError || !strings.Contains(stderr, "is not verified") || time.Since(began) < 2*time.Second {
		t.Errorf("verify --wait before sync: exit %d after %v, %s %s", code, time.Since(began), out, stderr)
	}
	if code, out, stderr := pinbot("sync", "web", "--wait", "90s"); code != exitOK || !strings.Contains(out, "VERIFIED") {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, stderr)
	}

	code, out, stderr = pinbot("verify", "web", "-o", "json")
	if code != exitOK {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, stderr)
	}
	var v struct {
		App        string           `json:"app"`
		Commit     string           `json:"commit"`
		Verified   bool             `json:"verified"`
		Containers []map[string]any `json:"containers"`
		Source     string           `json:"source"`
		Deployed   string           `json:"deployedCommit"`
		Head       string           `json:"headCommit"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.App != "web" || v.Commit != commit || !v.Verified || len(v.Containers) != 2 || v.Source != "pinbot" || v.Deployed != commit || v.Head != commit {
		t.Fatalf("verify -o json = %s", out)
	}
	for _, ct := range v.Containers {
		want := map[string]string{"namespace": "web", "container": "app", "gitDigest": digest, "runningDigest": digest, "verdict": "Verified"}
		for k, w := range want {
			if ct[k] != w {
				t.Errorf("container %s = %q, want %q", k, ct[k], w)
			}
		}
		if ct["ready"] != true {
			t.Errorf("container ready = %v", ct["ready"])
		}
		if pod, _ := ct["pod"].(string); !strings.HasPrefix(pod, "web-") {
			t.Errorf("container pod = %q", ct["pod"])
		}
	}

	code, out, _ = pinbot("verify", "web")
	if code != exitOK || !strings.Contains(out, "web at "+commit[:12]+": VERIFIED: 2/2 Pods run "+digest[:19]) {
		t.Errorf("verify table: exit %d\n%s", code, out)
	}
	// The Pods replaced: verify --wait follows the new ones until verified.
	if err := peers.Kube.CoreV1().Pods("web").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := pinbot("verify", "web", "--wait", "--timeout", "90s"); code != exitOK || !strings.Contains(out, "VERIFIED: 2/2 Pods") {
		t.Errorf("verify --wait after the Pods were replaced: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = pinbot("history", "web", "-o", "json")
	var rec struct {
		Entries []struct {
			Commit, Result, Trigger string
			Verified                bool
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != exitOK || len(rec.Entries) != 1 ||
		rec.Entries[0].Commit != commit || rec.Entries[0].Result != "Applied" || rec.Entries[0].Trigger != "manual" || !rec.Entries[0].Verified {
		t.Errorf("history -o json: exit %d, %s, %v", code, out, err)
	}
	code, out, _ = pinbot("status", "--cached")
	if code != exitOK || !strings.Contains(out, "Synced") || !strings.Contains(out, "Healthy") {
		t.Errorf("status --cached: exit %d\n%s", code, out)
	}
	code, out, _ = pinbot("history", "web")
	if code != exitOK || !strings.Contains(out, commit[:12]) || !strings.Contains(out, "manual") {
		t.Errorf("history: exit %d\n%s", code, out)
	}

	// Read commands need only what they read: with the forge's token file
	// gone, history and status --cached still answer.
	noToken := filepath.Join(t.TempDir(), "pinbot.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noToken, []byte(strings.Replace(string(b), "forge: {", "forge: {tokenFile: /nonexistent/token, ", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"history", "web"}, {"status", "--cached"}} {
		if code, out, stderr := run(t, append(args, "--config", noToken, "--kubeconfig", c.Kubeconfig)...); code != exitOK || !strings.Contains(out, "Healthy") {
			t.Errorf("%v without the token: exit %d, %s %s", args, code, out, stderr)
		}
	}

	// With only a context: the config, and the Gitea token, are the ones
	// pinbot serve's Deployment mounts in -n's namespace.
	installServe(ctx, t, peers.Kube, "pinbot-system", strings.Replace(config, "forge: {", "forge: {tokenFile: /etc/pinbot/gitea/token, ", 1), g.Token)
	t.Setenv("PINBOT_GITEA_TOKEN", "")
	for args, want := range map[string]string{"verify web": "VERIFIED", "history web": "manual", "status --cached": "Healthy"} {
		code, out, stderr := run(t, append(strings.Fields(args), "-n", "pinbot-system", "--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir())...)
		if code != exitOK || !strings.Contains(out, want) || strings.Contains(stderr, "could not be read") {
			t.Errorf("%v with only a context: exit %d, %s %s", args, code, out, stderr)
		}
	}
	// and completion completes the apps of that config.
	if _, out, _ := run(t, "__complete", "verify", "-n", "pinbot-system", "--kubeconfig", c.Kubeconfig, "w"); strings.Join(strings.Fields(out), " ") != "web :4" {
		t.Errorf("completing with only a context: %q, want web and the no-file directive", out)
	}
	if code, _, stderr := run(t, "status", "--cached", "-n", "web", "--kubeconfig", c.Kubeconfig); code != exitError || !strings.Contains(stderr, "no pinbot serve in namespace web") {
		t.Errorf("status in a namespace without pinbot: exit %d, %s", code, stderr)
	}
	t.Setenv("PINBOT_GITEA_TOKEN", g.Token)

	// refresh asks the running serve through the trigger ConfigMap.
	if code, out, stderr := run(t, "refresh", "web", "--config", cfg, "--kubeconfig", c.Kubeconfig); code != exitOK || !strings.Contains(out, "asked pinbot serve to pass web") {
		t.Fatalf("refresh: exit %d, %s %s", code, out, stderr)
	}
	cms, err := peers.Kube.CoreV1().ConfigMaps("pinbot-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for _, cm := range cms.Items {
		for k := range cm.Annotations {
			asked = asked || strings.HasSuffix(k, "/web")
		}
	}
	if !asked {
		t.Errorf("no trigger annotation for web after refresh: %+v", cms.Items)
	}
	if code, _, stderr := run(t, "refresh", "nope", "--config", cfg, "--kubeconfig", c.Kubeconfig); code != exitUsage || !strings.Contains(stderr, "argument APP") {
		t.Errorf("refresh of an unknown app: exit %d, %s", code, stderr)
	}
}

// installServe creates what the kustomize base installs, as far as the
// reading commands look: serve's Deployment (no replicas), its config in
// a ConfigMap and the Gitea token in a Secret, mounted as the base mounts
// them.
func installServe(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, config, token string) {
	t.Helper()
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinbot-config", Namespace: ns},
		Data: map[string]string{"reconciler.yaml": config}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pinbot-gitea", Namespace: ns},
		Data: map[string][]byte{"token": []byte(token)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := kube.ServeDeployment(ns, []string{"serve", "--config", "/etc/pinbot/config/reconciler.yaml", "--listen", ":8080"},
		[]corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/pinbot/config", ReadOnly: true},
			{Name: "gitea", MountPath: "/etc/pinbot/gitea", ReadOnly: true},
		},
		[]corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "pinbot-config"}}}},
			{Name: "gitea", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pinbot-gitea"}}},
		})
	if _, err := kc.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
