package reconciler_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/prune"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/reconciler/wave"
	"pinbot.dev/pinbot/render"
)

// Scenarios for prune, allowEmpty and sync waves (issue 5: 5, 6, 7, 9).

// configMap is a ConfigMap manifest; annotations are "key: value" YAML
// flow entries.
func configMap(name string, annotations ...string) string {
	ann := ""
	if len(annotations) > 0 {
		ann = ", annotations: {" + strings.Join(annotations, ", ") + "}"
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s%s}\ndata: {k: v}\n", name, ann)
}

// reconfigure replaces the scenario's Reconciler with one whose app has
// the given syncPolicy (YAML flow mapping), as an operator editing the
// config and restarting pinbot would.
func (s *scenario) reconfigure(policy string) {
	s.t.Helper()
	b, err := os.ReadFile(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	out := regexp.MustCompile(`(?m)^    syncPolicy: .*$`).ReplaceAllLiteralString(string(b), "    syncPolicy: "+policy)
	if err := os.WriteFile(s.cfg, []byte(out), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.reload()
}

// exists reports whether the object get reads is in the cluster and not
// being deleted.
func exists(t *testing.T, what string, get func() (metav1.Object, error)) bool {
	t.Helper()
	o, err := get()
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		t.Fatalf("reading %s: %s", what, err)
	}
	return o.GetDeletionTimestamp() == nil
}

func (s *scenario) configMapExists(ns, name string) bool {
	return exists(s.t, "ConfigMap "+name, func() (metav1.Object, error) {
		return env.kube.CoreV1().ConfigMaps(ns).Get(testCtx, name, metav1.GetOptions{})
	})
}

func (s *scenario) deploymentExists(name string) bool {
	return exists(s.t, "Deployment "+name, func() (metav1.Object, error) {
		return env.kube.AppsV1().Deployments(s.name).Get(testCtx, name, metav1.GetOptions{})
	})
}

func (s *scenario) latest() history.Entry {
	s.t.Helper()
	rec, err := s.r.History(testCtx, s.name)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(rec.Entries) == 0 {
		s.t.Fatal("no history")
	}
	return rec.Entries[0]
}

// refs builds references from "Kind/namespace/name" (Deployments in
// group apps, the rest in the core group).
func refs(kindNames ...string) []object.Ref {
	var out []object.Ref
	for _, kn := range kindNames {
		parts := strings.SplitN(kn, "/", 3) // Kind/namespace/name
		kind, ns, name := parts[0], parts[1], parts[2]
		group := ""
		if kind == "Deployment" {
			group = "apps"
		}
		out = append(out, object.Ref{Group: group, Kind: kind, Namespace: ns, Name: name})
	}
	return out
}

// 5. A manifest removed from Git: with prune off the object is Orphaned
// and kept; with prune on it is deleted, with what it owns, except an
// object annotated pinbot.dev/prune: "false" and one outside the app's
// allowNamespaces; `pinbot sync --prune` prunes once with the policy off.
func TestPruneRemovedManifest(t *testing.T) {
	s := newScenario(t, "prune", "{}")
	img := pushImage(t, "prune-app", "v1")
	s.push(map[string]string{
		"app/deploy.yaml": deployment(1, img.ref()),
		"app/keep.yaml":   configMap("keep", `pinbot.dev/prune: "false"`),
		"app/old.yaml":    configMap("old"),
		"app/stay.yaml":   configMap("stay"),
	}, "Four objects")
	if st, v, err := s.r.Sync(testCtx, s.name, rollout); err != nil || !st.Verified {
		t.Fatalf("first sync: %v; %s", err, describe(st, v))
	}
	// An object labelled for the app and applied by pinbot, in a namespace
	// the app may not write: prune never touches it.
	if _, err := env.kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prune-foreign"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	foreign := corev1ac.ConfigMap("foreign", "prune-foreign").WithLabels(map[string]string{object.LabelApp: s.name}).WithData(map[string]string{"k": "v"})
	if _, err := env.kube.CoreV1().ConfigMaps("prune-foreign").Apply(testCtx, foreign, metav1.ApplyOptions{FieldManager: object.FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}

	s.push(map[string]string{"app/stay.yaml": configMap("stay")}, "Remove three manifests")
	st, _, err := s.r.Sync(testCtx, s.name, 0)
	if err != nil {
		t.Fatalf("sync with prune off: %s", err)
	}
	if !s.deploymentExists("web") || !s.configMapExists(s.name, "old") || !s.configMapExists(s.name, "keep") {
		t.Fatal("prune off deleted an object")
	}
	if e := s.latest(); len(e.Pruned) != 0 || e.Result != history.Applied {
		t.Errorf("history entry %+v, want applied with nothing pruned", e)
	}
	orphans := refs("ConfigMap/prune/keep", "ConfigMap/prune/old", "Deployment/prune/web")
	if diff := cmp.Diff(orphans, st.Orphaned); diff != "" {
		t.Errorf("status orphaned (-want +got):\n%s", diff)
	}
	plan, err := s.r.DryRun(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := prune.Orphans{
		Delete: refs("ConfigMap/prune/old", "Deployment/prune/web"),
		Keep:   []prune.Kept{{Object: refs("ConfigMap/prune/keep")[0], Reason: `annotation pinbot.dev/prune: "false"`}},
	}
	if diff := cmp.Diff(wantPlan, plan.Orphans); diff != "" || plan.Prune {
		t.Errorf("dry run with prune off: prune %t, orphans (-want +got):\n%s", plan.Prune, diff)
	}

	s.reconfigure("{prune: true}")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("sync with prune on: %s", err)
	}
	if diff := cmp.Diff(wantPlan.Delete, s.latest().Pruned); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	poll.Until(t, rollout, "the Deployment, its ReplicaSets and Pods deleted", func() (bool, string) {
		rs, err := env.kube.AppsV1().ReplicaSets(s.name).List(testCtx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := env.kube.CoreV1().Pods(s.name).List(testCtx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, derr := env.kube.AppsV1().Deployments(s.name).Get(testCtx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(derr) && len(rs.Items) == 0 && len(pods.Items) == 0,
			fmt.Sprintf("deployment: %v; %d ReplicaSets, %d Pods", derr, len(rs.Items), len(pods.Items))
	})
	if s.configMapExists(s.name, "old") {
		t.Error("ConfigMap old not pruned")
	}
	if !s.configMapExists(s.name, "keep") || !s.configMapExists(s.name, "stay") || !s.configMapExists("prune-foreign", "foreign") {
		t.Error("prune deleted an object it must keep")
	}

	// pinbot sync --prune, with the app's policy off.
	s.reconfigure("{}")
	s.push(map[string]string{"app/next.yaml": configMap("next")}, "Replace stay with next")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil || !s.configMapExists(s.name, "stay") {
		t.Fatalf("sync without --prune: %v; stay kept: %t", err, s.configMapExists(s.name, "stay"))
	}
	plan, err = s.r.DryRun(testCtx, s.name, reconciler.SyncPrune())
	if err != nil || !plan.Prune || len(plan.Orphans.Delete) != 1 || plan.Orphans.Delete[0].Name != "stay" || !s.configMapExists(s.name, "stay") {
		t.Fatalf("dry run with --prune: %v; %+v", err, plan)
	}
	if _, _, err := s.r.Sync(testCtx, s.name, 0, reconciler.SyncPrune()); err != nil {
		t.Fatal(err)
	}
	if s.configMapExists(s.name, "stay") || !s.configMapExists(s.name, "next") || !s.configMapExists(s.name, "keep") {
		t.Errorf("after sync --prune: stay %t next %t keep %t, want stay deleted", s.configMapExists(s.name, "stay"), s.configMapExists(s.name, "next"), s.configMapExists(s.name, "keep"))
	}
}

// 6. An empty render with allowEmpty off is refused even with prune on:
// nothing is applied or deleted, and the app is Degraded naming why.
func TestEmptyRenderIsRefused(t *testing.T) {
	s := newScenario(t, "empty", "{prune: true}")
	s.push(map[string]string{"app/settings.yaml": configMap("settings"), "app/other.yaml": configMap("other")}, "Two objects")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	commit := s.push(map[string]string{"app/settings.yaml": "# moved to another repository\n"}, "A bad rebase empties the app")
	st, _, err := s.r.Sync(testCtx, s.name, 0)
	var re *render.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "the render holds no objects") {
		t.Fatalf("Sync error = %v, want a *render.Error for the empty render", err)
	}
	if diff := cmp.Diff([]string{"ConfigMap/other", "ConfigMap/settings"}, s.inventory()); diff != "" {
		t.Errorf("inventory after the refusal (-want +got):\n%s", diff)
	}
	if st.Health != verdict.Degraded || !strings.Contains(st.HealthReason, "the render holds no objects (set syncPolicy.allowEmpty") || st.Commit != commit {
		t.Errorf("status: %s at %s, want Degraded naming the empty render at %s", describe(st, nil), st.Commit, commit)
	}
	if e := s.latest(); e.Commit != commit || e.Result != history.Refused || len(e.Pruned) != 0 {
		t.Errorf("history entry %+v, want the refusal", e)
	}
	if _, err := s.r.DryRun(testCtx, s.name, reconciler.SyncPrune()); !errors.As(err, &re) {
		t.Errorf("dry run error = %v, want the same refusal", err)
	}
}

// wavesNode starts a simulated node whose Job containers run for run
// before they exit; Pods select it with nodeSelector
// {pinbot.dev/test-node: <name>}.
func wavesNode(t *testing.T, name string, run time.Duration) *kubeletsim.Sim {
	t.Helper()
	n := kubeletsim.New(env.cluster.Config(), kubeletsim.WithNodeName("sim-"+name), kubeletsim.WithNodeLabels(map[string]string{"pinbot.dev/test-node": name}),
		kubeletsim.WithRunDuration(run), kubeletsim.WithBasicAuth(env.gitea.RegistryHost, env.gitea.AdminUser, env.gitea.Token))
	if err := n.Start(testCtx); err != nil {
		t.Fatalf("starting node %s: %s", name, err)
	}
	t.Cleanup(n.Stop)
	return n
}

// migrationJob is a Job run once (no retry) on the node labelled node,
// in the wave its annotation says.
func migrationJob(name, node, image, annotation string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations: {%s}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {pinbot.dev/test-node: %s}
      containers:
        - name: migrate
          image: %s
`, name, annotation, node, image)
}

// webOn is a one-replica Deployment "web" on the node labelled node.
func webOn(node, image, annotation string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {%s}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {pinbot.dev/test-node: %s}
      containers:
        - name: app
          image: %s
`, annotation, node, image)
}

// 7. Waves: a migration Job in wave -1 (Argo CD's annotation) completes
// before the Deployment of wave 0 is created.
func TestWavesWaitForTheMigration(t *testing.T) {
	s := newScenario(t, "waves", "{}")
	const run = 2 * time.Second
	wavesNode(t, "waves", run)
	img := pushImage(t, "waves-app", "v1")
	s.push(map[string]string{
		"app/a-web.yaml":     webOn("waves", img.ref(), ""),
		"app/b-migrate.yaml": migrationJob("migrate", "waves", img.ref(), `argocd.argoproj.io/sync-wave: "-1"`),
		"app/c-schema.yaml":  configMap("schema", `pinbot.dev/sync-wave: "-1"`),
	}, "A migration before the app")
	plan, err := s.r.DryRun(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range plan.Waves {
		for _, o := range w.Objects {
			got = append(got, fmt.Sprintf("%d %s %s %s%s", w.Wave, o.Action, o.Object, o.Error, o.Note))
		}
	}
	want := []string{"-1 create Job waves/migrate ", "-1 create ConfigMap waves/schema ", "0 create Deployment waves/web "}
	if diff := cmp.Diff(want, got); diff != "" || plan.Failed() {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if _, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "migrate", metav1.GetOptions{}); !apierrors.IsNotFound(err) || len(s.inventory()) != 0 {
		t.Fatalf("the dry run applied objects: Job %v, others %q", err, s.inventory())
	}
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("sync: %s", err)
	}
	job, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web, err := env.kube.AppsV1().Deployments(s.name).Get(testCtx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.CompletionTime == nil {
		t.Fatalf("Job not completed when the sync returned: %+v", job.Status)
	}
	created, completed, webCreated := job.CreationTimestamp.Time, job.Status.CompletionTime.Time, web.CreationTimestamp.Time
	t.Logf("Job created %s, completed %s; Deployment created %s", created.Format(time.RFC3339), completed.Format(time.RFC3339), webCreated.Format(time.RFC3339))
	if completed.After(webCreated) {
		t.Errorf("Job completed at %s, after the Deployment was created at %s", completed, webCreated)
	}
	if webCreated.Sub(created) < run {
		t.Errorf("Deployment created %s after the Job, want at least the Job's run time %s", webCreated.Sub(created), run)
	}
	if e := s.latest(); e.Result != history.Applied || e.Applied != 3 {
		t.Errorf("history entry %+v", e)
	}

	// Someone scales the Deployment by hand: a dry run lists the drift a
	// sync would heal, and changes nothing.
	scale, err := env.kube.AppsV1().Deployments(s.name).GetScale(testCtx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if _, err := env.kube.AppsV1().Deployments(s.name).UpdateScale(testCtx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if plan, err = s.r.DryRun(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	var heal []string
	for _, d := range plan.Heal {
		heal = append(heal, d.String())
	}
	if diff := cmp.Diff([]string{"Deployment waves/web: spec.replicas git=1 live=3"}, heal); diff != "" {
		t.Errorf("dry run heal (-want +got):\n%s", diff)
	}
	if web, err = env.kube.AppsV1().Deployments(s.name).Get(testCtx, "web", metav1.GetOptions{}); err != nil || *web.Spec.Replicas != 3 {
		t.Errorf("after the dry run: %v, replicas %d, want the drift left alone", err, *web.Spec.Replicas)
	}
}

// 7. A failing Job stops the sync: the Deployment of the next wave is
// never created, and the status, history and commit status name the Job.
// A wave that does not become ready within waveTimeout stops it too.
func TestFailedWaveStopsTheSync(t *testing.T) {
	s := newScenario(t, "wavefail", "{}", "allowNamespaces: [wavefail]", "waveTimeout: 3s")
	node := wavesNode(t, "wavefail", 0)
	node.FailJob(func(p *corev1.Pod) bool { return p.Namespace == s.name })
	img := pushImage(t, "wavefail-app", "v1")
	commit := s.push(map[string]string{
		"app/web.yaml":     webOn("wavefail", img.ref(), ""),
		"app/migrate.yaml": migrationJob("migrate", "wavefail", img.ref(), `pinbot.dev/sync-wave: "-1"`),
	}, "A migration that fails")
	st, _, err := s.r.Sync(testCtx, s.name, 0)
	var we *wave.Error
	if !errors.As(err, &we) || we.Object.Kind != "Job" || we.Object.Name != "migrate" || we.Wave != -1 || we.Timeout != 0 {
		t.Fatalf("Sync error = %v, want a *WaveError naming Job migrate", err)
	}
	const want = "wave -1: Job wavefail/migrate failed: "
	if !strings.Contains(st.Error, want) {
		t.Errorf("status error %q, want it to name %q", st.Error, want)
	}
	if s.deploymentExists("web") {
		t.Error("the Deployment of wave 0 was created after its wave -1 failed")
	}
	if e := s.latest(); e.Commit != commit || e.Result != history.Failed || !strings.Contains(e.Reason, want) {
		t.Errorf("history entry %+v", e)
	}
	poll.Until(t, 10*time.Second, "commit status failure", func() (bool, string) {
		cs := s.commitStatus(commit)
		return cs != nil && cs.State == "failure" && strings.Contains(cs.Description, want), indentStatus(cs)
	})

	// A wave that never gets ready: a Deployment whose Pods never become
	// ready, in wave -1, with waveTimeout 3s.
	node.FailReadiness(func(p *corev1.Pod) bool { return p.Namespace == s.name })
	s.push(map[string]string{
		"app/web.yaml":   webOn("wavefail", img.ref(), `pinbot.dev/sync-wave: "-1"`),
		"app/later.yaml": configMap("later"),
	}, "A wave that never gets ready")
	began := time.Now()
	st, _, err = s.r.Sync(testCtx, s.name, 0)
	if !errors.As(err, &we) || we.Object.Name != "web" || we.Timeout != 3*time.Second {
		t.Fatalf("Sync error = %v after %s, want a *WaveError timing out on Deployment web", err, time.Since(began))
	}
	if !strings.Contains(st.Error, "wave -1: Deployment wavefail/web not ready after 3s: InProgress") {
		t.Errorf("status error %q", st.Error)
	}
	if s.configMapExists(s.name, "later") {
		t.Error("the ConfigMap of wave 0 was applied after its wave -1 timed out")
	}
}

// 9. A namespace outside the allow-list in Git: nothing of that sync is
// applied, not even an earlier wave's objects in allowed namespaces, and
// nothing is pruned though prune is on; the status names the object.
// (TestRefusedSyncAppliesNothing covers the single-wave case.)
func TestForbiddenNamespaceAppliesNoWave(t *testing.T) {
	s := newScenario(t, "forbidden", "{prune: true}")
	img := pushImage(t, "forbidden-app", "v1")
	s.push(map[string]string{"app/old.yaml": configMap("old")}, "One object")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	commit := s.push(map[string]string{
		"app/a-migrate.yaml":  migrationJob("migrate", "forbidden", img.ref(), `pinbot.dev/sync-wave: "-1"`),
		"app/b-settings.yaml": configMap("settings"),
		"app/c-evil.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil, namespace: kube-public, annotations: {pinbot.dev/sync-wave: \"5\"}}\n",
	}, "Write to kube-public in a late wave")
	st, _, err := s.r.Sync(testCtx, s.name, 0)
	var ge *guard.Error
	if !errors.As(err, &ge) {
		t.Fatalf("Sync error = %v, want a *GuardError", err)
	}
	const want = `ConfigMap kube-public/evil refused: namespace "kube-public" is not in allowNamespaces [forbidden]`
	if !strings.Contains(st.Error, want) || st.Commit != commit {
		t.Errorf("status error %q at %s, want it to name %q", st.Error, st.Commit, want)
	}
	if _, err := env.kube.BatchV1().Jobs(s.name).Get(testCtx, "migrate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the wave -1 Job: %v, want it never created", err)
	}
	if diff := cmp.Diff([]string{"ConfigMap/old"}, s.inventory()); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if s.configMapExists("kube-public", "evil") {
		t.Error("the forbidden object was applied")
	}
	if e := s.latest(); e.Commit != commit || e.Result != history.Refused || !strings.Contains(e.Reason, want) {
		t.Errorf("history entry %+v", e)
	}
}
