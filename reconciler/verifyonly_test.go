package reconciler_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	var files []string
	for _, crd := range []string{kube.ApplicationCRD, kube.KustomizationCRD, kube.GitRepositoryCRD} {
		f, err := kube.CRDFile(crd)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if err := env.cluster.InstallCRDs(testCtx, files...); err != nil {
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
		kind:     kind,
		dyn:      dynamic.NewForConfigOrDie(env.cluster.Config()),
	}
	block := fmt.Sprintf("argocd: {application: %s, namespace: argocd}", name)
	if kind == "flux" {
		block = fmt.Sprintf("flux: {kustomization: %s}", name)
	}
	config := strings.Join(extra, "\n") + fmt.Sprintf(`
forge: {url: %q, tokenFile: %q}
apps:
  - name: %s
    %s
`, env.gitea.URL, env.token, name, block)
	s.cfg = filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(s.cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := reconciler.Load(s.cfg)
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
	s.create(gitRepositoriesRes, "flux-system", fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %s, namespace: flux-system}
spec: {interval: 1m, url: %q, ref: {branch: main}}
`, s.name, env.gitea.RepoURL(org, s.name)))
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

// fluxApplied writes the status of the Kustomization having applied
// commit, through the status subresource as kustomize-controller does.
func (s *deployerScenario) fluxApplied(commit string) {
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
  - {id: %s_web_apps_Deployment, v: v1}
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: %s", lastTransitionTime: %q, observedGeneration: %d}
`, rev, rev, s.name, rev, time.Now().UTC().Format(time.RFC3339), u.GetGeneration())), &status); err != nil {
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
	w, err := gitforge.Clone(testCtx, env.gitea.RepoURL(org, s.name), "main", s.t.TempDir(), gitforge.Auth{Token: env.gitea.Token})
	if err != nil {
		s.t.Fatal(err)
	}
	writeFiles(s.t, w.Dir(), files)
	if _, err := w.Commit(title, gitforge.Signature{Name: "pinbot", Email: "pinbot@example.com"}); err != nil {
		s.t.Fatal(err)
	}
	branch := "pinbot/" + s.name + "/app"
	if err := w.Push(testCtx, branch, false); err != nil {
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
		if st.Context == reconciler.StatusContext(s.name) {
			out = append(out, string(st.State))
		}
	}
	return out
}

// verdictsOf lists each current container's verdict.
func verdictsOf(v *reconciler.Verification) []reconciler.Verdict {
	var out []reconciler.Verdict
	for _, c := range v.Containers {
		out = append(out, c.Verdict)
	}
	return out
}

func allAre(v *reconciler.Verification, want reconciler.Verdict, n int) bool {
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

// TestArgoCDAppIsVerified plays Argo CD through a sync, a merge it has not
// synced, an operation still running, the sync of the merge and a stale
// node, and checks what pinbot verify says and reports at each step.
func TestArgoCDAppIsVerified(t *testing.T) {
	s := newDeployerScenario(t, "vo-argo", "argocd")
	v1, v2, v3 := pushImage(t, "vo-argo-app", "v1"), pushImage(t, "vo-argo-app", "v2"), pushImage(t, "vo-argo-app", "v3")
	first := s.push(map[string]string{"app/deploy.yaml": deployment(2, v1.repo+":v1@"+v1.digest)}, "Initial")
	s.apply(deployment(2, v1.repo+":v1@"+v1.digest))
	s.createApplication("app", "main", "")
	s.argoSynced(first, "web")

	// Verified at the head.
	st, v := s.waitStatus(rollout, "verified at the head", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Source != "argocd" || st.DeployedCommit != first || st.HeadCommit != first || st.Commit != first || v.Commit != first ||
		st.Sync != reconciler.Synced || st.Health != reconciler.Healthy || st.Repo != env.gitea.RepoURL(org, s.name) || st.Branch != "main" || st.Path != "app" {
		t.Errorf("status at the head = %+v", st)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v1.digest || c.RunningDigest != v1.digest || c.Namespace != s.name {
			t.Errorf("container %+v, want %s verified", c, v1.digest)
		}
	}

	// A promotion merged that Argo CD has not synced: the Pods still run
	// v1, which the deployed revision pins: Pending, not verified.
	merge, pr := s.promote(map[string]string{"app/deploy.yaml": deployment(2, v2.repo+":v2@"+v2.digest)}, "Promote vo-argo-app to v2")
	behind := "Argo CD has not synced " + merge + " yet"
	st, v = s.waitStatus(30*time.Second, "pending behind the merge", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return st.Commit == merge && v != nil && allAre(v, reconciler.Pending, 2)
	})
	if v.Verified || st.Verified || st.Sync != reconciler.OutOfSync || st.DeployedCommit != first || st.HeadCommit != merge {
		t.Errorf("behind the head: status %+v", st)
	}
	for _, c := range v.Containers {
		if c.Reason != behind || c.GitDigest != v2.digest || c.RunningDigest != v1.digest {
			t.Errorf("container %+v, want Pending: %s", c, behind)
		}
	}
	if _, _, err := s.r.Report(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	if got := s.commitStatus(merge); got == nil || got.State != "pending" || !strings.Contains(got.Description, "has not synced") {
		t.Errorf("commit status behind the head = %s, want pending: %s", indentStatus(got), behind)
	}

	// Argo CD starts the sync: while its operation runs, its health does
	// not count.
	s.argoRunning(merge)
	st, v = s.waitStatus(10*time.Second, "health unknown while the operation runs", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return st.Health != reconciler.Healthy
	})
	if st.Health != reconciler.HealthUnknown || !strings.Contains(st.HealthReason, "still Running") || st.DeployedCommit != first || v.Verified {
		t.Errorf("during the operation: status %+v", st)
	}

	// Argo CD synced the merge: verified on the new digest, reported once
	// with the per-Pod proof on the promotion pull request.
	s.apply(deployment(2, v2.repo+":v2@"+v2.digest))
	s.argoSynced(merge, "web")
	st, v = s.waitStatus(rollout, "verified on v2", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return v != nil && v.Verified
	})
	if st.DeployedCommit != merge || st.Sync != reconciler.Synced || st.Health != reconciler.Healthy {
		t.Errorf("after the sync: status %+v", st)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest || c.RunningDigest != v2.digest {
			t.Errorf("container %+v, want %s verified", c, v2.digest)
		}
	}
	for range 2 { // the second report posts nothing new
		if _, v, err := s.r.Report(testCtx, s.name); err != nil || !v.Verified {
			t.Fatalf("Report: %v, %v", v, err)
		}
	}
	want := "2/2 Pods run " + v2.digest[:len("sha256:")+12] + "…"
	if got := s.commitStatus(merge); got == nil || got.State != "success" || got.Description != want {
		t.Errorf("commit status = %s, want success: %s", indentStatus(got), want)
	}
	if got := s.postedStates(merge); strings.Join(got, ",") != "pending,success" {
		t.Errorf("states posted on the merge = %q, want pending then success, once each", got)
	}
	comments, err := env.forge.Comments(testCtx, s.repo, pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || !strings.Contains(comments[0], "**pinbot verified `vo-argo`**") || !strings.Contains(comments[0], want) {
		t.Errorf("pull request comments = %q, want one verification", comments)
	}
	rec, err := s.r.History(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if l := rec.Entries[0]; l.Commit != merge || l.Result != reconciler.Observed || l.Trigger != reconciler.TriggerVerify || !l.Verified || !l.Commented {
		t.Errorf("history entry = %+v", l)
	}

	// A node that kept a stale image: synced at the head, the Pods run v2
	// where the head pins v3.
	if err := env.node.StaleImage(v3.repo, v2.digest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.node.StaleImage(v3.repo, "") })
	third := s.push(map[string]string{"app/deploy.yaml": deployment(2, v3.repo+":v3@"+v3.digest)}, "v3")
	s.apply(deployment(2, v3.repo+":v3@"+v3.digest))
	s.argoSynced(third, "web")
	st, v = s.waitStatus(rollout, "mismatch on the stale node", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return st.Commit == third && v != nil && allAre(v, reconciler.Mismatch, 2)
	})
	if v.Verified || st.Sync != reconciler.Synced || !strings.HasPrefix(st.Verification, "Mismatch: pod web-") {
		t.Errorf("stale node: status %+v", st)
	}
	if _, _, err := s.r.Report(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	if got := s.commitStatus(third); got == nil || got.State != "failure" || !strings.Contains(got.Description, "Mismatch") {
		t.Errorf("commit status on the stale node = %s, want failure", indentStatus(got))
	}

	// pinbot never applies a verify-only app.
	if _, _, err := s.r.Sync(testCtx, s.name, 0); !errors.Is(err, reconciler.ErrVerifyOnly) {
		t.Errorf("Sync = %v, want ErrVerifyOnly", err)
	}
}

// TestFluxAppIsVerifiedByTheLoop plays Flux while pinbot's loop runs: the
// loop verifies and reports on its own, the Pod watch (not the 10-minute
// poll) picks up the rollout of a merge Flux applied, and nothing is
// posted twice.
func TestFluxAppIsVerifiedByTheLoop(t *testing.T) {
	s := newDeployerScenario(t, "vo-flux", "flux", "interval: 10m")
	v1, v2, v3 := pushImage(t, "vo-flux-app", "v1"), pushImage(t, "vo-flux-app", "v2"), pushImage(t, "vo-flux-app", "v3")
	first := s.push(map[string]string{"deploy/web.yaml": deployment(2, v1.repo+":v1@"+v1.digest)}, "Initial")
	s.apply(deployment(2, v1.repo+":v1@"+v1.digest))
	s.createKustomization("deploy")
	s.fluxApplied(first)

	st, _ := s.waitStatus(rollout, "verified at the head", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Source != "flux" || st.DeployedCommit != first || st.HeadCommit != first || st.Sync != reconciler.Synced || st.Health != reconciler.Healthy || st.Path != "deploy" {
		t.Errorf("status at the head = %+v", st)
	}

	s.run()
	until(t, rollout, "the loop reports success on the first commit", func() (bool, string) {
		got := s.commitStatus(first)
		return got != nil && got.State == "success", indentStatus(got)
	})

	// A merge Flux has not applied yet: Gitea's push webhook names the
	// repository the Kustomization's GitRepository follows (the app has no
	// repo of its own), and the loop, woken by it, posts pending.
	merge, pr := s.promote(map[string]string{"deploy/web.yaml": deployment(2, v2.repo+":v2@"+v2.digest)}, "Promote vo-flux-app to v2")
	if got := pushWebhook(t, s.r, env.gitea.RepoURL(org, s.name), "main", merge); got != `{"triggered":["vo-flux"]}` {
		t.Errorf("push webhook answered %s, want the verify-only app triggered", got)
	}
	until(t, 30*time.Second, "pending on the merge", func() (bool, string) {
		got := s.commitStatus(merge)
		return got != nil && got.State == "pending" && strings.Contains(got.Description, "Flux has not applied "+merge+" yet"), indentStatus(got)
	})
	st, _ = s.waitStatus(10*time.Second, "Pending behind the merge", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return st.Commit == merge && v != nil && allAre(v, reconciler.Pending, 2)
	})
	if st.Verified || st.Sync != reconciler.OutOfSync || st.DeployedCommit != first {
		t.Errorf("behind the head: status %+v", st)
	}

	// Flux applies the merge; the rollout's Pod events wake the loop.
	s.apply(deployment(2, v2.repo+":v2@"+v2.digest))
	s.fluxApplied(merge)
	until(t, rollout, "success on the merge", func() (bool, string) {
		got := s.commitStatus(merge)
		return got != nil && got.State == "success", indentStatus(got)
	})
	want := "2/2 Pods run " + v2.digest[:len("sha256:")+12] + "…"
	if got := s.commitStatus(merge); got.Description != want {
		t.Errorf("commit status %s, want success: %s", indentStatus(got), want)
	}
	until(t, 10*time.Second, "the proof comment", func() (bool, string) {
		comments, err := env.forge.Comments(testCtx, s.repo, pr)
		if err != nil {
			return false, err.Error()
		}
		return len(comments) == 1 && strings.Contains(comments[0], "**pinbot verified `vo-flux`**"), fmt.Sprint(comments)
	})
	rec := s.waitStoredStatus("the stored status verified", func(st *reconciler.AppStatus) bool {
		return st.Verified && st.Commit == merge
	})
	if rec.Source != "flux" || rec.DeployedCommit != merge || rec.Sync != reconciler.Synced {
		t.Errorf("stored status = %+v", rec)
	}
	// Another pass of the loop posts nothing new.
	if err := s.r.Trigger(s.name); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.r.Report(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	if got := s.postedStates(merge); strings.Join(got, ",") != "pending,success" {
		t.Errorf("states posted on the merge = %q, want pending then success, once each", got)
	}
	if got := s.postedStates(first); strings.Join(got, ",") != "success" {
		t.Errorf("states posted on the first commit = %q, want success once", got)
	}
	comments, err := env.forge.Comments(testCtx, s.repo, pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 {
		t.Errorf("pull request comments = %q, want one", comments)
	}

	// Flux applies v3 on a node that kept v2: the loop posts failure.
	if err := env.node.StaleImage(v3.repo, v2.digest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.node.StaleImage(v3.repo, "") })
	third := s.push(map[string]string{"deploy/web.yaml": deployment(2, v3.repo+":v3@"+v3.digest)}, "v3")
	s.apply(deployment(2, v3.repo+":v3@"+v3.digest))
	s.fluxApplied(third)
	if err := s.r.Trigger(s.name); err != nil {
		t.Fatal(err)
	}
	until(t, rollout, "failure on the stale node", func() (bool, string) {
		got := s.commitStatus(third)
		return got != nil && got.State == "failure" && strings.Contains(got.Description, "Mismatch"), indentStatus(got)
	})
}

// TestArgoCDHelmAppIsVerified: an Application whose source is a chart,
// with valueFiles and parameters that override the chart's defaults, and
// targetRevision HEAD (the remote's default branch). pinbot must render
// what the Application selects: the chart's defaults pin v1 and one
// replica, the Application v2 and two.
func TestArgoCDHelmAppIsVerified(t *testing.T) {
	s := newDeployerScenario(t, "vo-helm", "argocd")
	v1, v2 := pushImage(t, "vo-helm-app", "v1"), pushImage(t, "vo-helm-app", "v2")
	chart := map[string]string{
		"charts/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":        fmt.Sprintf("replicaCount: 1\nimage: {repository: %s, digest: %q}\n", v1.repo, v1.digest),
		"charts/web/values-prod.yaml":   fmt.Sprintf("image: {digest: %q}\n", v2.digest),
		"charts/web/templates/web.yaml": helmDeployment,
	}
	head := s.push(chart, "chart")
	s.apply(namedDeployment(s.name, 2, v2.repo+"@"+v2.digest)) // what Argo CD renders and applies
	s.createApplication("charts/web", "HEAD", `{valueFiles: [values-prod.yaml], parameters: [{name: replicaCount, value: "2"}]}`)
	s.argoSynced(head, s.name)

	st, v := s.waitStatus(rollout, "verified with the Application's values", func(st *reconciler.AppStatus, v *reconciler.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Branch != "main" || st.Commit != head || len(v.Containers) != 2 {
		t.Errorf("status %+v, %d containers; want 2 on branch main at %s", st, len(v.Containers), head)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest {
			t.Errorf("container %+v: Git digest %s, want the values file's %s", c, c.GitDigest, v2.digest)
		}
	}
	if _, _, err := s.r.Report(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	if got := s.commitStatus(head); got == nil || got.State != "success" {
		t.Errorf("commit status = %s, want success", indentStatus(got))
	}
}

// helmDeployment is a chart template of a Deployment named after the
// release, whose replicas and image come from the values.
const helmDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      nodeSelector: {kubernetes.io/arch: amd64}
      containers:
        - name: app
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
`

// namedDeployment is what helmDeployment renders for release name.
func namedDeployment(name string, replicas int, image string) string {
	return strings.NewReplacer("{{ .Release.Name }}", name, "{{ .Values.replicaCount }}", fmt.Sprint(replicas),
		`"{{ .Values.image.repository }}@{{ .Values.image.digest }}"`, image).Replace(helmDeployment)
}

// pushWebhook sends r's webhook handler a signed Gitea push of commit to
// branch of the repository at cloneURL, and returns the answer's body.
func pushWebhook(t *testing.T, r *reconciler.Reconciler, cloneURL, branch, commit string) string {
	t.Helper()
	const secret = "vo-webhook-secret"
	body := fmt.Sprintf(`{"ref":"refs/heads/%s","after":%q,"repository":{"clone_url":%q}}`, branch, commit, cloneURL)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	req := httptest.NewRequest(http.MethodPost, "/webhook/gitea", strings.NewReader(body))
	req.Header.Set("X-Gitea-Event-Type", "push")
	req.Header.Set("X-Gitea-Delivery", commit)
	req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
	rec := httptest.NewRecorder()
	r.WebhookHandler([]byte(secret)).ServeHTTP(rec, req)
	return strings.TrimSpace(rec.Body.String())
}
