package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/report"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/registry"
)

// The peers every test shares: Gitea (Git and the registry), the control
// plane with one simulated node, and Flux's controllers. Each test has its
// own namespace, repository and app.
var (
	env     *peers
	envErr  error
	testCtx context.Context
)

type peers struct {
	*stack.Stack
	flux  *kube.Flux
	argo  *kube.ArgoCD
	dyn   dynamic.Interface
	forge *gitforge.Gitea
	reg   *registry.Client
	token string // file holding the Gitea token
}

// org owns the test repositories and images on Gitea.
const org = "team"

// argoResync is how often Argo CD's controller compares each app with
// Git (its default is 3 minutes); a push refreshes the app at once, as
// Argo CD's webhook does.
const argoResync = 30 * time.Second

// rollout bounds one deployer round trip: Git poll, apply, Pods, proof.
const rollout = 2 * time.Minute

var (
	kustomizationsRes  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositoriesRes = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	// pinbot's debug log goes to a file, which a failure names:
	// a timing failure then says what pinbot did, without the log
	// changing the timing as a terminal would.
	logFile, err := os.CreateTemp("", "pinbot-e2e-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testCtx = logctx.Into(ctx, slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})))
	p, stop, err := startPeers(testCtx)
	defer stop()
	if err != nil {
		envErr = err
		fmt.Fprintf(os.Stderr, "starting the peers: %s\n", err.Error())
	}
	env = p
	code := m.Run()
	if code != 0 && p != nil && p.flux != nil {
		fmt.Fprintf(os.Stderr, "Flux's logs:\n%s", p.flux.Tail(40))
	}
	if code != 0 && p != nil && p.argo != nil {
		fmt.Fprintf(os.Stderr, "Argo CD's logs:\n%s", p.argo.Tail(40))
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "pinbot's log is %s\n", logFile.Name())
	} else {
		os.Remove(logFile.Name())
	}
	return code
}

func startPeers(ctx context.Context) (*peers, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	st, err := stack.Start(ctx, stack.Options{Node: []kubeletsim.Option{kubeletsim.WithNodeName("sim-amd64")}})
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, st.Stop)
	p := &peers{Stack: st, dyn: dynamic.NewForConfigOrDie(st.Cluster.Config())}
	if p.flux, err = st.Cluster.StartFlux(ctx); err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { _ = p.flux.Stop() })
	if p.argo, err = st.Cluster.StartArgoCD(ctx, argoResync); err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { _ = p.argo.Stop() })
	if err := st.Gitea.CreateOrg(ctx, org); err != nil {
		return nil, stop, err
	}
	dir, err := os.MkdirTemp("", "pinbot-e2e-")
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(dir) })
	p.token = filepath.Join(dir, "token")
	if err := os.WriteFile(p.token, []byte(st.Gitea.Token+"\n"), 0o600); err != nil {
		return nil, stop, err
	}
	if p.forge, err = gitforge.NewGitea(st.Gitea.URL, st.Gitea.Token); err != nil {
		return nil, stop, err
	}
	if p.reg, err = registry.New(registry.WithBasicAuth(st.Gitea.RegistryHost, st.Gitea.AdminUser, st.Gitea.Token)); err != nil {
		return nil, stop, err
	}
	return p, stop, nil
}

func needPeers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers, Flux and Argo CD (make tools)")
	}
	if envErr != nil {
		t.Fatalf("peers did not start: %s", envErr)
	}
}

// app is one app a deployer deploys from its own Gitea repository into
// its own namespace, and a pinbot reconciler that proves it, verify-only.
type app struct {
	t    *testing.T
	name string
	repo gitforge.Repo
	r    *reconciler.Reconciler
	// refresh, when not nil, tells the deployer of a push, as its
	// webhook would.
	refresh func()
}

// newApp creates the namespace and the repository with files as its
// first commit on main, and returns them with the first commit. start
// starts pinbot on it.
func newApp(t *testing.T, name string, files map[string]string) (*app, string) {
	t.Helper()
	needPeers(t)
	a := &app{t: t, name: name, repo: gitforge.Repo{Owner: org, Name: name}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, err := env.Gitea.CreateRepoWith(testCtx, org, name, "main", files)
	if err != nil {
		t.Fatal(err)
	}
	return a, first
}

// start runs pinbot's loop on the app, whose deployer block (a YAML flow
// mapping under the app) is deployer; extra lines go to the top of the
// config.
func (a *app) start(deployer string, extra ...string) {
	a.t.Helper()
	a.r = startPinbot(a.t, fmt.Sprintf("  - name: %s\n    %s\n", a.name, deployer), extra...)
}

// startPinbot runs pinbot's loop on apps (the config's apps: entries,
// indented under it) until the test ends; extra lines go to the top of
// the config.
func startPinbot(t *testing.T, apps string, extra ...string) *reconciler.Reconciler {
	t.Helper()
	cfgFile := filepath.Join(t.TempDir(), "pinbot.yaml")
	cfgText := strings.Join(extra, "\n") + fmt.Sprintf(`
interval: 10m
forge: {url: %q, tokenFile: %q}
apps:
%s`, env.Gitea.URL, env.token, apps)
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconciler.New(cfg, env.Cluster.Config(), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan error, 1)
	go func() { done <- r.RunUntil(ctx, ctx.Done()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %s", err)
		}
	})
	return r
}

// newFluxApp is newApp with Flux's GitRepository (with the credentials
// Secret a private repository needs) and a Kustomization of path whose
// spec also has the YAML lines of spec (indented as spec's fields), and
// pinbot started on it.
func newFluxApp(t *testing.T, name string, files map[string]string, path, spec string) (*app, string) {
	t.Helper()
	a, first := newApp(t, name, files)
	if _, err := env.Kube.CoreV1().Secrets(kube.FluxNamespace).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-git"},
		StringData: map[string]string{"username": env.Gitea.AdminUser, "password": env.Gitea.Token},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.create(gitRepositoriesRes, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %s, namespace: flux-system}
spec:
  interval: 2s
  url: %q
  ref: {branch: main}
  secretRef: {name: %s-git}
`, name, env.Gitea.RepoURL(org, name), name))
	a.create(kustomizationsRes, fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./%s
  targetNamespace: %s
  sourceRef: {kind: GitRepository, name: %s}
%s`, name, path, name, name, spec))
	a.start(fmt.Sprintf("flux: {kustomization: %s}", name))
	return a, first
}

// push commits files on main, as a reviewer's merge lands, and wakes the
// loop as Gitea's push webhook does in serve.
func (a *app) push(files map[string]string, msg string) string {
	a.t.Helper()
	sha, err := env.Gitea.Commit(testCtx, org, a.name, "main", "main", files, msg)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.refresh != nil {
		a.refresh()
	}
	if a.r != nil {
		for _, n := range a.r.Following("main", env.Gitea.RepoURL(org, a.name)) {
			if err := a.r.Trigger(n); err != nil {
				a.t.Fatal(err)
			}
		}
	}
	return sha
}

func (a *app) create(res schema.GroupVersionResource, y string) {
	a.t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(y), &u.Object); err != nil {
		a.t.Fatalf("YAML literal: %s", err)
	}
	if _, err := env.dyn.Resource(res).Namespace(u.GetNamespace()).Create(testCtx, u, metav1.CreateOptions{}); err != nil {
		a.t.Fatalf("creating %s %s: %s", u.GetKind(), u.GetName(), err)
	}
}

// patchKustomization merge-patches the app's Kustomization (YAML), as a
// person with kubectl or the flux CLI does.
func (a *app) patchKustomization(y string) {
	a.t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		a.t.Fatalf("YAML literal: %s", err)
	}
	if _, err := env.dyn.Resource(kustomizationsRes).Namespace(kube.FluxNamespace).Patch(testCtx, a.name, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		a.t.Fatalf("patching Kustomization %s: %s", a.name, err)
	}
}

// kustomization reads what kustomize-controller wrote: the last applied
// revision and the Ready condition's reason.
func (a *app) kustomization() (applied, ready string) {
	a.t.Helper()
	return kustomizationReady(a.t, a.name)
}

// waitApplied waits for kustomize-controller to report commit applied.
func (a *app) waitApplied(commit string) {
	a.t.Helper()
	poll.Until(a.t, rollout, "Flux applies "+commit[:8], func() (bool, string) {
		applied, ready := a.kustomization()
		return strings.HasSuffix(applied, commit), fmt.Sprintf("lastAppliedRevision %q, Ready %s", applied, ready)
	})
}

// waitStatus polls the app's live status until cond holds.
func (a *app) waitStatus(what string, cond func(*status.App, *verdict.Verification) bool) (*status.App, *verdict.Verification) {
	a.t.Helper()
	var st *status.App
	var v *verdict.Verification
	poll.Until(a.t, rollout, what, func() (bool, string) {
		var err error
		st, v, err = a.r.Status(testCtx, a.name)
		if err != nil {
			return false, err.Error()
		}
		return cond(st, v), describe(st, v)
	})
	return st, v
}

// waitVerifiedOn waits for the app's proof at commit and checks that every
// container runs digest on node.
func (a *app) waitVerifiedOn(what, commit, node, digest string) {
	a.t.Helper()
	_, v := a.waitStatus(what, func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == commit && v != nil && v.Verified
	})
	for _, c := range v.Containers {
		if c.Node != node || c.RunningDigest != digest {
			a.t.Errorf("container %s/%s on %s runs %s; want it on %s, running %s", c.Pod, c.Container, c.Node, c.RunningDigest, node, digest)
		}
	}
}

func describe(st *status.App, v *verdict.Verification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "commit %.8s deployed %.8s sync %s health %s (%s) verified %t: %s; error %q", st.Commit, st.DeployedCommit, st.Sync, st.Health, st.HealthReason, st.Verified, st.Verification, st.Error)
	if v != nil {
		for _, c := range v.Containers {
			fmt.Fprintf(&b, "\n  %s/%s %s running %s git %s %s", c.Pod, c.Container, c.Verdict, c.RunningDigest, c.GitDigest, c.Reason)
		}
	}
	return b.String()
}

// waitCommitStatus polls the pinbot/<app> status of sha on Gitea until
// cond holds, and returns it.
func (a *app) waitCommitStatus(sha, what string, cond func(*gitforge.Status) bool) *gitforge.Status {
	a.t.Helper()
	var got *gitforge.Status
	poll.Until(a.t, rollout, what, func() (bool, string) {
		sts, err := env.forge.Statuses(testCtx, a.repo, sha)
		if err != nil {
			return false, err.Error()
		}
		got = nil
		for i := range sts {
			if sts[i].Context == report.StatusContext(a.name) {
				got = &sts[i]
			}
		}
		if got == nil {
			return false, "no pinbot status on " + sha
		}
		return cond(got), fmt.Sprintf("%s: %s", got.State, got.Description)
	})
	return got
}

// startSpoke starts another control plane with its own node, which pulls
// from the tests' Gitea registry, and creates namespace ns there; the
// test's end stops both.
func startSpoke(t *testing.T, ns string) (*kube.Cluster, *kubeletsim.Sim) {
	t.Helper()
	needPeers(t)
	spoke, err := kube.Start(testCtx, kube.Options{})
	if err != nil {
		t.Fatalf("starting the spoke's control plane: %s", err)
	}
	t.Cleanup(func() { _ = spoke.Stop() })
	node := kubeletsim.New(spoke.Config(), kubeletsim.WithNodeName("spoke-amd64"),
		kubeletsim.WithBasicAuth(env.Gitea.RegistryHost, env.Gitea.AdminUser, env.Gitea.Token))
	if err := node.Start(testCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	if _, err := kubernetes.NewForConfigOrDie(spoke.Config()).CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return spoke, node
}

// pushImage pushes a random image to the Gitea registry as
// team/<name>:<tag> and returns its repository and digest.
func pushImage(t *testing.T, name, tag string) (repo, digest string) {
	t.Helper()
	needPeers(t)
	repo = env.Gitea.RegistryHost + "/" + org + "/" + name
	d, err := env.Gitea.PushRandomImage(repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	return repo, d
}

// deployment is a Deployment named web running image, replicas times.
func deployment(replicas int, image string) string {
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
      containers:
        - name: app
          image: %s
`, replicas, image)
}
