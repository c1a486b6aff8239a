package reconciler_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

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
	st, v := s.waitStatus(rollout, "verified at the head", func(st *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Source != "argocd" || st.DeployedCommit != first || st.HeadCommit != first || st.Commit != first || v.Commit != first ||
		st.Sync != status.Synced || st.Health != verdict.Healthy || st.Repo != env.gitea.RepoURL(org, s.name) || st.Branch != "main" || st.Path != "app" {
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
	st, v = s.waitStatus(30*time.Second, "pending behind the merge", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == merge && v != nil && allAre(v, verdict.Pending, 2)
	})
	if v.Verified || st.Verified || st.Sync != status.OutOfSync || st.DeployedCommit != first || st.HeadCommit != merge {
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
	st, v = s.waitStatus(10*time.Second, "health unknown while the operation runs", func(st *status.App, v *verdict.Verification) bool {
		return st.Health != verdict.Healthy
	})
	if st.Health != verdict.HealthUnknown || !strings.Contains(st.HealthReason, "still Running") || st.DeployedCommit != first || v.Verified {
		t.Errorf("during the operation: status %+v", st)
	}

	// Argo CD synced the merge: verified on the new digest, reported once
	// with the per-Pod proof on the promotion pull request.
	s.apply(deployment(2, v2.repo+":v2@"+v2.digest))
	s.argoSynced(merge, "web")
	st, v = s.waitStatus(rollout, "verified on v2", func(st *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if st.DeployedCommit != merge || st.Sync != status.Synced || st.Health != verdict.Healthy {
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
	if l := rec.Entries[0]; l.Commit != merge || l.Result != history.Observed || l.Trigger != history.TriggerVerify || !l.Verified || !l.Commented {
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
	st, v = s.waitStatus(rollout, "mismatch on the stale node", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == third && v != nil && allAre(v, verdict.Mismatch, 2)
	})
	if v.Verified || st.Sync != status.Synced || !strings.HasPrefix(st.Verification, "Mismatch: pod web-") {
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

	st, _ := s.waitStatus(rollout, "verified at the head", func(st *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Source != "flux" || st.DeployedCommit != first || st.HeadCommit != first || st.Sync != status.Synced || st.Health != verdict.Healthy || st.Path != "deploy" {
		t.Errorf("status at the head = %+v", st)
	}

	s.run()
	poll.Until(t, rollout, "the loop reports success on the first commit", func() (bool, string) {
		got := s.commitStatus(first)
		return got != nil && got.State == "success", indentStatus(got)
	})

	// A merge Flux has not applied yet: Gitea's push webhook names the
	// repository the Kustomization's GitRepository follows (the app has no
	// repo of its own), and the loop, woken by it, posts pending.
	merge, pr := s.promote(map[string]string{"deploy/web.yaml": deployment(2, v2.repo+":v2@"+v2.digest)}, "Promote vo-flux-app to v2")
	if got := pushed(t, s.r, env.gitea.RepoURL(org, s.name), "main"); !slices.Equal(got, []string{"vo-flux"}) {
		t.Errorf("push webhook answered %s, want the verify-only app triggered", got)
	}
	poll.Until(t, 30*time.Second, "pending on the merge", func() (bool, string) {
		got := s.commitStatus(merge)
		return got != nil && got.State == "pending" && strings.Contains(got.Description, "Flux has not applied "+merge+" yet"), indentStatus(got)
	})
	st, _ = s.waitStatus(10*time.Second, "Pending behind the merge", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == merge && v != nil && allAre(v, verdict.Pending, 2)
	})
	if st.Verified || st.Sync != status.OutOfSync || st.DeployedCommit != first {
		t.Errorf("behind the head: status %+v", st)
	}

	// Flux applies the merge; the rollout's Pod events wake the loop.
	s.apply(deployment(2, v2.repo+":v2@"+v2.digest))
	s.fluxApplied(merge)
	poll.Until(t, rollout, "success on the merge", func() (bool, string) {
		got := s.commitStatus(merge)
		return got != nil && got.State == "success", indentStatus(got)
	})
	want := "2/2 Pods run " + v2.digest[:len("sha256:")+12] + "…"
	if got := s.commitStatus(merge); got.Description != want {
		t.Errorf("commit status %s, want success: %s", indentStatus(got), want)
	}
	poll.Until(t, 10*time.Second, "the proof comment", func() (bool, string) {
		comments, err := env.forge.Comments(testCtx, s.repo, pr)
		if err != nil {
			return false, err.Error()
		}
		return len(comments) == 1 && strings.Contains(comments[0], "**pinbot verified `vo-flux`**"), fmt.Sprint(comments)
	})
	rec := s.waitStoredStatus("the stored status verified", func(st *status.App) bool {
		return st.Verified && st.Commit == merge
	})
	if rec.Source != "flux" || rec.DeployedCommit != merge || rec.Sync != status.Synced {
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
	poll.Until(t, rollout, "failure on the stale node", func() (bool, string) {
		got := s.commitStatus(third)
		return got != nil && got.State == "failure" && strings.Contains(got.Description, "Mismatch"), indentStatus(got)
	})

	// Each change of the proof is an Event on the Kustomization itself,
	// which kubectl describe and Flux's own tooling show.
	waitEvents(t, "flux-system", "Kustomization", s.name, "Verified", "Pending", "Mismatch")
}

// waitEvents waits for pinbot's Events with each of reasons on the object
// kind/name in ns, bound to its UID as kubectl describe selects them.
func waitEvents(t *testing.T, ns, kind, name string, reasons ...string) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("Events %v on %s %s/%s", reasons, kind, ns, name), func() (bool, string) {
		evs, err := env.kube.CoreV1().Events(ns).List(testCtx, metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		var got []string
		for _, e := range evs.Items {
			got = append(got, fmt.Sprintf("%s %s (uid %q): %s", e.Type, e.Reason, e.InvolvedObject.UID, e.Message))
			if e.Source.Component == "pinbot" && e.InvolvedObject.UID != "" {
				seen[e.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, strings.Join(got, "\n")
			}
		}
		return true, ""
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

	st, v := s.waitStatus(rollout, "verified with the Application's values", func(st *status.App, v *verdict.Verification) bool {
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

// TestArgoCDMultiSourceValues: a multi-source Application whose chart
// takes a value file through a ref source of the same repository
// ($values/envs/prod/values.yaml, outside the chart). The file pins v2
// over the chart's v1: Pods running v2 are Verified, and Pods running
// the chart's own default, v1, are a Mismatch.
func TestArgoCDMultiSourceValues(t *testing.T) {
	s := newDeployerScenario(t, "vo-multi", "argocd")
	v1, v2 := pushImage(t, "vo-multi-app", "v1"), pushImage(t, "vo-multi-app", "v2")
	head := s.push(map[string]string{
		"charts/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":        fmt.Sprintf("replicaCount: 1\nimage: {repository: %s, digest: %q}\n", v1.repo, v1.digest),
		"charts/web/templates/web.yaml": helmDeployment,
		"envs/prod/values.yaml":         fmt.Sprintf("image: {digest: %q}\n", v2.digest),
	}, "chart and prod values")
	repo := env.gitea.RepoURL(org, s.name)
	s.create(applicationsRes, "argocd", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  sources:
  - {repoURL: %q, path: charts/web, targetRevision: HEAD, helm: {valueFiles: [$values/envs/prod/values.yaml]}}
  - {repoURL: %q, targetRevision: HEAD, ref: values}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
`, s.name, repo, repo, s.name))
	s.apply(namedDeployment(s.name, 1, v2.repo+"@"+v2.digest))
	// A multi-source sync's status: one revision per source.
	now := time.Now().UTC().Format(time.RFC3339)
	s.mergePatch(applicationsRes, "argocd", fmt.Sprintf(`
status:
  reconciledAt: %q
  operationState:
    operation: {sync: {revisions: [%[2]s, %[2]s]}}
    phase: Succeeded
    startedAt: %[1]q
    finishedAt: %[1]q
    syncResult: {revision: "", revisions: [%[2]s, %[2]s]}
  history: [{id: 0, revision: "", revisions: [%[2]s, %[2]s], deployedAt: %[1]q}]
  health: {status: Healthy}
  sync: {status: Synced, revisions: [%[2]s, %[2]s]}
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: %[3]s, name: %[3]s, status: Synced, health: {status: Healthy}}
`, now, head, s.name))

	_, v := s.waitStatus(rollout, "verified with the ref source's values", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest {
			t.Errorf("container %+v: Git digest %s, want the $values file's %s", c, c.GitDigest, v2.digest)
		}
	}

	s.apply(namedDeployment(s.name, 1, v1.repo+"@"+v1.digest)) // the chart's default, not what the Application selects
	s.waitStatus(rollout, "a Mismatch for the chart's default", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && !v.Verified && hasVerdict(v, verdict.Mismatch)
	})
}
