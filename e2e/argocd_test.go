package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

var applicationsRes = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// newArgoApp is newApp with Argo CD's repository Secret and an
// Application of the repository's main, whose spec.source also has the
// YAML lines of source (indented as source's fields), synced
// automatically, and pinbot started on it.
func newArgoApp(t *testing.T, name string, files map[string]string, source string) (*app, string) {
	t.Helper()
	a, first := newApp(t, name, files)
	url := env.Gitea.RepoURL(org, name)
	if _, err := env.Kube.CoreV1().Secrets(kube.ArgoCDNamespace).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-repo", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "git", "url": url, "username": env.Gitea.AdminUser, "password": env.Gitea.Token},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.create(applicationsRes, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source:
    repoURL: %q
    targetRevision: main
%s  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  syncPolicy: {automated: {}}
`, name, url, source, name))
	a.refresh = func() { a.patchApplication(`{metadata: {annotations: {argocd.argoproj.io/refresh: normal}}}`) }
	a.start(fmt.Sprintf("argocd: {application: %s, namespace: argocd}", name))
	return a, first
}

// patchApplication merge-patches the app's Application (YAML), as a
// person with kubectl or the argocd CLI does.
func (a *app) patchApplication(y string) {
	a.t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		a.t.Fatalf("YAML literal: %s", err)
	}
	if _, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).Patch(testCtx, a.name, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		a.t.Fatalf("patching Application %s: %s", a.name, err)
	}
}

// waitSynced waits for Argo CD's controller to report a finished sync of
// commit: status.sync.revision and the operation's result name it.
func (a *app) waitSynced(commit string) {
	a.t.Helper()
	poll.Until(a.t, rollout, "Argo CD syncs "+commit[:8], func() (bool, string) {
		u, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).Get(testCtx, a.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
		sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		result, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
		msg, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "message")
		return rev == commit && result == commit && phase == "Succeeded",
			fmt.Sprintf("sync %s at %.8s, operation %s of %.8s: %s", sync, rev, phase, result, msg)
	})
}

// TestArgoCDDeploysWhatPinbotProves: a directory app. Each merge reaches
// Verified through the real repo-server and application-controller,
// pinbot applying nothing; with automated sync off, a merge is pending
// until someone syncs; a stale node is a mismatch.
func TestArgoCDDeploysWhatPinbotProves(t *testing.T) {
	repo, v1 := pushImage(t, "argo-plain", "v1")
	_, v2 := pushImage(t, "argo-plain", "v2")
	_, v3 := pushImage(t, "argo-plain", "v3")
	a, first := newArgoApp(t, "argo-plain", map[string]string{"deploy/web.yaml": deployment(2, repo+":v1@"+v1)}, "    path: deploy\n")

	a.waitSynced(first)
	// Argo CD's health lags its sync: it may say Missing for a moment
	// after the Pods already run. pinbot reports the health Argo CD gives.
	st, v := a.waitStatus("verified and healthy at the first commit", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == first && v != nil && v.Verified && st.Health == verdict.Healthy
	})
	if st.Source != "argocd" || st.DeployedCommit != first || st.Sync != status.Synced {
		t.Errorf("status at the first commit: %s", describe(st, v))
	}
	a.waitCommitStatus(first, "success on the first commit", func(s *gitforge.Status) bool { return s.State == "success" })

	// Automated sync off: Argo CD sees the merge (OutOfSync) but does not
	// apply it, and pinbot says it waits for Argo CD.
	a.patchApplication(`{spec: {syncPolicy: null}}`)
	held := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2)}, "Promote argo-plain to v2")
	a.waitCommitStatus(held, "pending while Argo CD does not sync", func(s *gitforge.Status) bool {
		return s.State == "pending" && strings.Contains(s.Description, "Argo CD has not synced "+held+" yet")
	})
	st, v = a.waitStatus("pending behind the merge", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == held && st.DeployedCommit == first && v != nil && !v.Verified
	})
	if st.Sync != status.OutOfSync {
		t.Errorf("behind the merge: %s", describe(st, v))
	}

	// Automated sync back on: Argo CD syncs the merge; the proof follows.
	a.patchApplication(`{spec: {syncPolicy: {automated: {}}}}`)
	a.waitSynced(held)
	got := a.waitCommitStatus(held, "success once Argo CD syncs v2", func(s *gitforge.Status) bool { return s.State == "success" })
	if want := "2/2 Pods run " + v2[:len("sha256:")+12] + "…"; got.Description != want {
		t.Errorf("commit status %q, want %q", got.Description, want)
	}

	// Argo CD syncs v3 on a node that kept v2: a mismatch, named.
	if err := env.Node.StaleImage(repo, v2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Node.StaleImage(repo, "") })
	third := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v3@"+v3)}, "Promote argo-plain to v3")
	a.waitSynced(third)
	a.waitCommitStatus(third, "failure on the stale node", func(s *gitforge.Status) bool {
		return s.State == "failure" && strings.Contains(s.Description, "Mismatch")
	})
}
