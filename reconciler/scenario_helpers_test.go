package reconciler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/report"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// scenario is one app: a namespace, a Gitea repository holding its
// manifests under app/, a config file and a Reconciler. The app, the
// namespace and the repository share the name.
type scenario struct {
	t    *testing.T
	name string
	repo gitforge.Repo
	cfg  string // config file
	r    *reconciler.Reconciler
}

// newScenario creates the namespace and the (empty) repository and a
// Reconciler for one app with the given syncPolicy (YAML flow mapping).
// extra lines ("key: value") are added to the app's config.
func newScenario(t *testing.T, name, syncPolicy string, extra ...string) *scenario {
	t.Helper()
	needPeers(t)
	s := &scenario{t: t, name: name, repo: gitforge.Repo{Owner: org, Name: name}}
	if _, err := env.kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %s", name, err)
	}
	if err := env.gitea.CreateRepo(testCtx, org, name, "main"); err != nil {
		t.Fatal(err)
	}
	s.cfg = filepath.Join(t.TempDir(), "pinbot.yaml")
	cfgText := fmt.Sprintf(`interval: 60s
forge: {url: %q, tokenFile: %q}
apps:
  - name: %s
    repo: %s
    branch: main
    path: app
    namespace: %s
    syncPolicy: %s
`, env.gitea.URL, env.token, name, env.gitea.RepoURL(org, name), name, syncPolicy)
	if len(extra) == 0 {
		extra = []string{"allowNamespaces: [" + name + "]"}
	}
	for _, e := range extra {
		cfgText += "    " + e + "\n"
	}
	if err := os.WriteFile(s.cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.r, err = reconciler.New(cfg, env.cluster.Config(), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.r.Close)
	return s
}

// reload replaces the scenario's Reconciler with one on its config file
// as it is now, as an operator editing the config and restarting pinbot
// would.
func (s *scenario) reload() {
	s.t.Helper()
	cfg, err := config.Load(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	r, err := reconciler.New(cfg, env.cluster.Config(), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(s.t.TempDir()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(r.Close)
	s.r = r
}

// push replaces the branch with one commit holding files (paths under the
// repository root) and returns its SHA.
func (s *scenario) push(files map[string]string, msg string) string {
	s.t.Helper()
	dir := s.t.TempDir()
	filetree.WriteIn(s.t, dir, files)
	sha, err := env.gitea.PushDir(testCtx, org, s.name, "main", dir, msg)
	if err != nil {
		s.t.Fatal(err)
	}
	return sha
}

// deployment is a Deployment "web" of replicas Pods running image on the
// amd64 node, rolled out one surge Pod at a time without taking a ready Pod
// down.
func deployment(replicas int, image string) string { return deploymentOn("amd64", replicas, image) }

// deploymentOn is deployment on the node of architecture arch.
func deploymentOn(arch string, replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {kubernetes.io/arch: %s}
      containers:
        - name: app
          image: %s
`, replicas, arch, image)
}

// status polls the app's live status until cond holds.
func (s *scenario) waitStatus(timeout time.Duration, what string, cond func(*status.App, *verdict.Verification) bool) (*status.App, *verdict.Verification) {
	s.t.Helper()
	var st *status.App
	var v *verdict.Verification
	poll.Until(s.t, timeout, what, func() (bool, string) {
		var err error
		st, v, err = s.r.Status(testCtx, s.name)
		if err != nil {
			return false, err.Error()
		}
		return cond(st, v), describe(st, v)
	})
	return st, v
}

func describe(st *status.App, v *verdict.Verification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sync %s health %s (%s) verified %t: %s; error %q", st.Sync, st.Health, st.HealthReason, st.Verified, st.Verification, st.Error)
	if v != nil {
		for _, c := range v.Containers {
			fmt.Fprintf(&b, "\n  %s/%s %s running %s git %s %s", c.Pod, c.Container, c.Verdict, c.RunningDigest, c.GitDigest, c.Reason)
		}
	}
	return b.String()
}

// inventory lists the objects in the app's namespace that carry its
// inventory label, as "Kind/name".
func (s *scenario) inventory() []string {
	s.t.Helper()
	sel := metav1.ListOptions{LabelSelector: object.LabelApp + "=" + s.name}
	var out []string
	cms, err := env.kube.CoreV1().ConfigMaps(s.name).List(testCtx, sel)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, c := range cms.Items {
		out = append(out, "ConfigMap/"+c.Name)
	}
	ds, err := env.kube.AppsV1().Deployments(s.name).List(testCtx, sel)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, d := range ds.Items {
		out = append(out, "Deployment/"+d.Name)
	}
	return out
}

// readyPods counts the app's Ready Pods whose container image is image.
func (s *scenario) readyPods(image string) int {
	s.t.Helper()
	pods, err := env.kube.CoreV1().Pods(s.name).List(testCtx, metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || len(p.Spec.Containers) == 0 || p.Spec.Containers[0].Image != image {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// commitStatus returns the pinbot/<app> status of sha on Gitea, or nil.
func (s *scenario) commitStatus(sha string) *gitforge.Status {
	s.t.Helper()
	sts, err := env.forge.Statuses(testCtx, s.repo, sha)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := range sts {
		if sts[i].Context == report.StatusContext(s.name) {
			return &sts[i]
		}
	}
	return nil
}

// setInterval rewrites the config's interval and reloads.
func (s *scenario) setInterval(d string) {
	s.t.Helper()
	b, err := os.ReadFile(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(s.cfg, []byte(strings.Replace(string(b), "interval: 60s", "interval: "+d, 1)), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.reload()
}
