package reconciler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/report"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// The verify-only scenarios: the test plays Argo CD or Flux. It installs
// the deployer's real CRDs, applies the manifests as the deployer would
// (server-side, under the deployer's field manager), and writes the
// deployer's status; pinbot only reads and proves.

var (
	applicationsRes    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	kustomizationsRes  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositoriesRes = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	deploymentsRes     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// deployerScenario is one verify-only app: its namespace, its Gitea
// repository, the deployer's object of the same name, and a Reconciler.
type deployerScenario struct {
	*scenario
	kind    string // "argocd" or "flux"
	dyn     dynamic.Interface
	history []string // Argo CD's status.history revisions, oldest first
}

// newDeployerScenario makes a verify-only app named name deployed by kind
// ("argocd" or "flux"); extra lines go to the top of the config.
func newDeployerScenario(t *testing.T, name, kind string, extra ...string) *deployerScenario {
	t.Helper()
	needPeers(t)
	if err := env.cluster.InstallNamedCRDs(testCtx, kube.ApplicationCRD, kube.KustomizationCRD, kube.GitRepositoryCRD, kube.HelmReleaseCRD, kube.HelmRepositoryCRD, kube.OCIRepositoryCRD); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"argocd", "flux-system", name} {
		_, err := env.kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %s", ns, err)
		}
	}
	if err := env.gitea.CreateRepo(testCtx, org, name, "main"); err != nil {
		t.Fatal(err)
	}
	s := &deployerScenario{
		scenario: &scenario{t: t, name: name, repo: gitforge.Repo{Owner: org, Name: name}},
		kind:     strings.TrimSuffix(kind, "-helm"),
		dyn:      dynamic.NewForConfigOrDie(env.cluster.Config()),
	}
	block := fmt.Sprintf("argocd: {application: %s, namespace: argocd}", name)
	switch kind {
	case "flux":
		block = fmt.Sprintf("flux: {kustomization: %s}", name)
	case "flux-helm":
		block = fmt.Sprintf("flux: {helmRelease: %s}", name)
	}
	cfgText := strings.Join(extra, "\n") + fmt.Sprintf(`
forge: {url: %q, tokenFile: %q}
apps:
  - name: %s
    %s
`, env.gitea.URL, env.token, name, block)
	s.cfg = filepath.Join(t.TempDir(), "pinbot.yaml")
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

// apply applies manifest (one object) to the app's namespace as the
// deployer's controller does: server-side, under its field manager.
func (s *deployerScenario) apply(manifest string) {
	s.t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		s.t.Fatalf("manifest: %s", err)
	}
	u.SetNamespace(s.name)
	if _, err := s.dyn.Resource(deploymentsRes).Namespace(s.name).Apply(testCtx, u.GetName(), u, metav1.ApplyOptions{FieldManager: s.kind + "-controller", Force: true}); err != nil {
		s.t.Fatalf("applying %s as %s: %s", u.GetName(), s.kind, err)
	}
}

// createApplication creates the Argo CD Application of the app: the
// repository's path at targetRevision, into the app's namespace, with
// source.helm when helm is not empty (YAML flow mapping).
func (s *deployerScenario) createApplication(path, targetRevision, helm string) {
	s.t.Helper()
	y := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, path: %s, targetRevision: %s}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
`, s.name, env.gitea.RepoURL(org, s.name), path, targetRevision, s.name)
	s.create(applicationsRes, "argocd", y)
	if helm != "" {
		s.mergePatch(applicationsRes, "argocd", `{spec: {source: {helm: `+helm+`}}}`)
	}
}

// argoSynced writes the status of a successful sync of commit that Argo
// CD has since reconciled, with the Deployment workload among its
// resources.
func (s *deployerScenario) argoSynced(commit, workload string) {
	s.t.Helper()
	s.history = append(s.history, commit)
	now := time.Now().UTC().Format(time.RFC3339)
	var hist []string
	for i, c := range s.history {
		hist = append(hist, fmt.Sprintf(`{id: %d, revision: %s, deployedAt: %q}`, i, c, now))
	}
	s.mergePatch(applicationsRes, "argocd", fmt.Sprintf(`
status:
  reconciledAt: %q
  operationState:
    operation: {sync: {revision: %s}}
    phase: Succeeded
    startedAt: %q
    finishedAt: %q
    syncResult: {revision: %s}
  history: [%s]
  health: {status: Healthy}
  sync: {status: Synced, revision: %s}
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: %s, name: %s, status: Synced, health: {status: Healthy}}
`, now, commit, now, now, commit, strings.Join(hist, ", "), commit, s.name, workload))
}

// argoRunning writes the status of a sync of commit that still runs.
func (s *deployerScenario) argoRunning(commit string) {
	s.t.Helper()
	s.mergePatch(applicationsRes, "argocd", fmt.Sprintf(`
status:
  operationState:
    operation: {sync: {revision: %s}}
    phase: Running
    startedAt: %q
    finishedAt: null
    syncResult: null
  sync: {status: OutOfSync, revision: %s}
`, commit, time.Now().UTC().Format(time.RFC3339), commit))
}

// createKustomization creates the Flux GitRepository and Kustomization of
// the app: the repository's branch main at path, into the app's
// namespace.
func (s *deployerScenario) createKustomization(path string) {
	s.t.Helper()
	s.createGitRepository()
	s.create(kustomizationsRes, "flux-system", fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./%s
  targetNamespace: %s
  sourceRef: {kind: GitRepository, name: %s}
`, s.name, path, s.name, s.name))
}

// createGitRepository creates the Flux GitRepository of the app's
// repository, following main.
func (s *deployerScenario) createGitRepository() {
	s.t.Helper()
	s.create(gitRepositoriesRes, "flux-system", fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %s, namespace: flux-system}
spec: {interval: 1m, url: %q, ref: {branch: main}}
`, s.name, env.gitea.RepoURL(org, s.name)))
}

// fluxApplied writes the status of the Kustomization having applied
// commit, through the status subresource as kustomize-controller does.
func (s *deployerScenario) fluxApplied(commit string) {
	s.t.Helper()
	s.fluxAppliedAs(commit, "web")
}

// fluxAppliedAs is fluxApplied with the Deployment workload in the
// inventory.
func (s *deployerScenario) fluxAppliedAs(commit, workload string) {
	s.t.Helper()
	ri := s.dyn.Resource(kustomizationsRes).Namespace("flux-system")
	u, err := ri.Get(testCtx, s.name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	status := map[string]any{}
	rev := "main@sha1:" + commit
	if err := sigsyaml.Unmarshal([]byte(fmt.Sprintf(`
lastAppliedRevision: %s
lastAttemptedRevision: %s
inventory:
  entries:
  - {id: %s_%s_apps_Deployment, v: v1}
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: %s", lastTransitionTime: %q, observedGeneration: %d}
`, rev, rev, s.name, workload, rev, time.Now().UTC().Format(time.RFC3339), u.GetGeneration())), &status); err != nil {
		s.t.Fatal(err)
	}
	status["observedGeneration"] = u.GetGeneration()
	u.Object["status"] = status
	if _, err := ri.UpdateStatus(testCtx, u, metav1.UpdateOptions{}); err != nil {
		s.t.Fatalf("updating the Kustomization's status: %s", err)
	}
}

func (s *deployerScenario) create(res schema.GroupVersionResource, ns, y string) {
	s.t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(y), &u.Object); err != nil {
		s.t.Fatalf("YAML literal: %s", err)
	}
	if _, err := s.dyn.Resource(res).Namespace(ns).Create(testCtx, u, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating %s %s: %s", u.GetKind(), u.GetName(), err)
	}
}

// mergePatch merge-patches the deployer's object of the app: the
// Application's CRD has no status subresource, so Argo CD's status is
// written this way.
func (s *deployerScenario) mergePatch(res schema.GroupVersionResource, ns, y string) {
	s.t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		s.t.Fatalf("YAML literal: %s", err)
	}
	if _, err := s.dyn.Resource(res).Namespace(ns).Patch(testCtx, s.name, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		s.t.Fatalf("merge-patching %s: %s", s.name, err)
	}
}

// promote merges a pinbot promotion pull request that writes files, and
// returns its merge commit and number.
func (s *deployerScenario) promote(files map[string]string, title string) (string, int64) {
	s.t.Helper()
	branch := "pinbot/" + s.name + "/app"
	if _, err := env.gitea.Commit(testCtx, org, s.name, "main", branch, files, title); err != nil {
		s.t.Fatal(err)
	}
	pr, err := env.forge.CreatePull(testCtx, s.repo, gitforge.Pull{Head: branch, Base: "main", Title: title, Body: title + "\n<!-- pinbot:promotion -->"})
	if err != nil {
		s.t.Fatal(err)
	}
	merge, err := env.gitea.MergePull(testCtx, org, s.name, pr.Number)
	if err != nil {
		s.t.Fatal(err)
	}
	return merge, pr.Number
}

// postedStates lists every pinbot/<app> state posted on sha, oldest first
// (not just the latest, as the combined status shows).
func (s *deployerScenario) postedStates(sha string) []string {
	s.t.Helper()
	c, err := env.gitea.Client(testCtx)
	if err != nil {
		s.t.Fatal(err)
	}
	sts, _, err := c.ListStatuses(org, s.name, sha, sdk.ListStatusesOption{})
	if err != nil {
		s.t.Fatal(err)
	}
	sort.Slice(sts, func(i, j int) bool { return sts[i].ID < sts[j].ID })
	var out []string
	for _, st := range sts {
		if st.Context == report.StatusContext(s.name) {
			out = append(out, string(st.State))
		}
	}
	return out
}

// verdictsOf lists each current container's verdict.
func verdictsOf(v *verdict.Verification) []verdict.Verdict {
	var out []verdict.Verdict
	for _, c := range v.Containers {
		out = append(out, c.Verdict)
	}
	return out
}

func allAre(v *verdict.Verification, want verdict.Verdict, n int) bool {
	vs := verdictsOf(v)
	if len(vs) != n {
		return false
	}
	for _, x := range vs {
		if x != want {
			return false
		}
	}
	return true
}

// namedDeployment is what helmDeployment renders for release name.
func namedDeployment(name string, replicas int, image string) string {
	return strings.NewReplacer("{{ .Release.Name }}", name, "{{ .Values.replicaCount }}", fmt.Sprint(replicas),
		`"{{ .Values.image.repository }}@{{ .Values.image.digest }}"`, image).Replace(helmDeployment)
}

// pushed does for a push of branch of the repository at cloneURL what
// serve's webhook does: it triggers the apps following that branch, and
// returns their names.
func pushed(t *testing.T, r *reconciler.Reconciler, cloneURL, branch string) []string {
	t.Helper()
	names := r.Following(branch, cloneURL)
	for _, n := range names {
		if err := r.Trigger(n); err != nil {
			t.Fatal(err)
		}
	}
	return names
}
