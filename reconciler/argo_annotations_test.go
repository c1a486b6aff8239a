package reconciler_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/prune"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/reconciler/wave"
)

// Manifests written for Argo CD keep their meaning (issue 10, part 3):
// a PreSync hook Job completes before the Deployment is applied, a
// PostSync hook after it is ready, a Skip object is never applied; once
// gone from Git, an object with sync-options Prune=false is kept by a
// prune, and one with compare-options IgnoreExtraneous is not reported
// Orphaned. A hook the cluster no longer holds is not Missing.
func TestArgoCDAnnotations(t *testing.T) {
	s := newScenario(t, "argoann", "{}")
	wavesNode(t, "argoann", time.Second)
	img := pushImage(t, "argoann-app", "v1")
	commit := s.push(map[string]string{
		"app/web.yaml":   webOn("argoann", img.ref(), ""),
		"app/seed.yaml":  migrationJob("seed", "argoann", img.ref(), `argocd.argoproj.io/hook: PreSync`),
		"app/done.yaml":  configMap("done", `argocd.argoproj.io/hook: PostSync`),
		"app/skip.yaml":  configMap("skipped", `argocd.argoproj.io/hook: Skip`),
		"app/keep.yaml":  configMap("keep", `argocd.argoproj.io/sync-options: "ServerSideApply=true,Prune=false"`),
		"app/extra.yaml": configMap("extra", `argocd.argoproj.io/compare-options: IgnoreExtraneous`),
		"app/old.yaml":   configMap("old"),
	}, "Manifests from Argo CD")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("sync: %s", err)
	}
	seed, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "seed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web, err := env.kube.AppsV1().Deployments(s.name).Get(testCtx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if seed.Status.CompletionTime == nil || seed.Status.CompletionTime.After(web.CreationTimestamp.Time) {
		t.Errorf("PreSync Job completed %v, Deployment created %s: want the Job first", seed.Status.CompletionTime, web.CreationTimestamp)
	}
	done, err := env.kube.CoreV1().ConfigMaps(s.name).Get(testCtx, "done", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PostSync hook: %s", err)
	}
	if web.Status.ReadyReplicas != 1 {
		t.Errorf("PostSync hook created %s, but the Deployment was not ready when the sync returned: %+v", done.CreationTimestamp, web.Status)
	}
	if s.configMapExists(s.name, "skipped") {
		t.Error("the Skip object was applied")
	}
	if e := s.latest(); e.Commit != commit || e.Result != history.Applied || e.Applied != 6 {
		t.Errorf("history entry %+v, want 6 objects applied", e)
	}

	// The completed hook Job is deleted by hand (as its TTL would): the
	// app stays in sync, and nothing reports it missing.
	background := metav1.DeletePropagationBackground
	if err := env.kube.BatchV1().Jobs(s.name).Delete(testCtx, "seed", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the Job gone", func() (bool, string) {
		_, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "seed", metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	st, _ := s.waitStatus(time.Minute, "verified", func(st *status.App, v *verdict.Verification) bool { return st.Verified })
	if st.Sync != status.Synced || len(st.OutOfSync) != 0 {
		t.Errorf("status without the hook Job: %s, out of sync %v", describe(st, nil), st.OutOfSync)
	}
	d, err := s.r.Diff(testCtx, s.name)
	if err != nil || !d.InSync() {
		t.Errorf("diff without the hook Job: %+v, %v; want in sync", d, err)
	}

	// Three ConfigMaps leave Git.
	s.push(map[string]string{
		"app/web.yaml":  webOn("argoann", img.ref(), ""),
		"app/seed.yaml": migrationJob("seed", "argoann", img.ref(), `argocd.argoproj.io/hook: PreSync`),
		"app/done.yaml": configMap("done", `argocd.argoproj.io/hook: PostSync`),
	}, "Remove three ConfigMaps")
	if d, err = s.r.Diff(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refs("ConfigMap/argoann/keep", "ConfigMap/argoann/old"), d.Orphaned); diff != "" {
		t.Errorf("orphaned (-want +got), want IgnoreExtraneous left out:\n%s", diff)
	}
	plan, err := s.r.DryRun(testCtx, s.name, reconciler.SyncPrune())
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := prune.Orphans{
		Delete: refs("ConfigMap/argoann/extra", "ConfigMap/argoann/old"),
		Keep:   []prune.Kept{{Object: refs("ConfigMap/argoann/keep")[0], Reason: "annotation argocd.argoproj.io/sync-options: Prune=false"}},
	}
	if diff := cmp.Diff(wantPlan, plan.Orphans); diff != "" {
		t.Errorf("prune plan (-want +got):\n%s", diff)
	}
	if _, _, err := s.r.Sync(testCtx, s.name, 0, reconciler.SyncPrune()); err != nil {
		t.Fatalf("sync --prune: %s", err)
	}
	poll.Until(t, 30*time.Second, "prune done", func() (bool, string) {
		return !s.configMapExists(s.name, "old") && !s.configMapExists(s.name, "extra"),
			fmt.Sprintf("old %t, extra %t", s.configMapExists(s.name, "old"), s.configMapExists(s.name, "extra"))
	})
	if !s.configMapExists(s.name, "keep") {
		t.Error("prune deleted the object annotated Prune=false")
	}
	// The second commit's sync ran the deleted hook once more (it was
	// gone), and it completed.
	if seed, err = env.kube.BatchV1().Jobs(s.name).Get(testCtx, "seed", metav1.GetOptions{}); err != nil || seed.Status.CompletionTime == nil {
		t.Errorf("hook Job after the second sync: %v, %v; want it run again and completed", seed.Status, err)
	}
}

// A failed pre-install hook fails its wave: the sync stops before the
// Deployment, naming the phase and the Job. `pinbot sync` then runs the
// hook again (a new Job replaces the failed one) and the sync goes on.
func TestFailedHookRunsAgainOnManualSync(t *testing.T) {
	s := newScenario(t, "hookfail", "{}", "allowNamespaces: [hookfail]", "waveTimeout: 30s")
	node := wavesNode(t, "hookfail", 0)
	node.FailJob(func(p *corev1.Pod) bool { return p.Namespace == s.name })
	img := pushImage(t, "hookfail-app", "v1")
	s.push(map[string]string{
		"app/web.yaml":     webOn("hookfail", img.ref(), ""),
		"app/migrate.yaml": migrationJob("migrate", "hookfail", img.ref(), `helm.sh/hook: pre-install`),
	}, "A failing hook")
	_, _, err := s.r.Sync(testCtx, s.name, 0)
	var we *wave.Error
	if !errors.As(err, &we) || we.Phase != hook.PreSync || we.Object.Name != "migrate" || !strings.HasPrefix(err.Error(), "PreSync wave 0: Job hookfail/migrate failed: ") {
		t.Fatalf("sync error = %v, want a PreSync *WaveError naming Job migrate", err)
	}
	if s.deploymentExists("web") {
		t.Fatal("the Deployment was applied after its pre-install hook failed")
	}
	failed, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	node.FailJob(nil)
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("sync after the fix: %s", err)
	}
	job, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.UID == failed.UID || job.Status.CompletionTime == nil {
		t.Errorf("hook Job: uid %s (failed run %s), completed %v; want a new, completed run", job.UID, failed.UID, job.Status.CompletionTime)
	}
	if !s.deploymentExists("web") {
		t.Error("the Deployment was not applied after the hook succeeded")
	}
}
