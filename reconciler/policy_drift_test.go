package reconciler_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/testenv/faultproxy"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/ssa"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// The scenarios of issue 5 that concern drift: self-heal on and off, a
// label Git never set, a drift war, and a frozen source. Each app polls
// every 2s so the loop's own passes are what the tests observe.

// 1. Self-heal on: `kubectl scale --replicas=1` against Git's 3 is
// restored, and the history records the heal.
func TestSelfHealRestoresReplicas(t *testing.T) {
	s := newDriftScenario(t, "heal", driftApp{policy: "{automated: true, selfHeal: true}"})
	img := pushImage(t, "heal-app", "v1")
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(3, img.ref())}, "Three replicas")
	s.runLoop()
	s.waitEntry(commit, "the first sync verified")

	scaleWeb(t, s.name, 1)
	var heal *history.Entry
	poll.Until(t, rollout, "replicas restored to 3 and the heal recorded", func() (bool, string) {
		heal = s.healEntries().latest()
		n := webReplicas(t, s.name)
		return n == 3 && heal != nil, fmt.Sprintf("replicas %d, heal %+v", n, heal)
	})
	want := fmt.Sprintf("Deployment %s/web: spec.replicas git=3 live=1", s.name)
	if heal.Commit != commit || heal.Result != history.Applied || heal.Applied != 1 || len(heal.Healed) != 1 || heal.Healed[0].String() != want {
		t.Errorf("heal entry %s, want one object healed at %s: %s", jsonOf(heal), commit[:7], want)
	}
	st := s.waitStoredStatus("Synced and Healthy after the heal", func(st *status.App) bool {
		return st.Sync == status.Synced && st.Health == verdict.Healthy && st.Verified
	})
	if len(st.Drift) != 0 || st.Commit != commit {
		t.Errorf("stored status after the heal: %s", jsonOf(st))
	}
}

// 2. Self-heal off: the same edit is reported as drift with the field
// path, and nothing is changed.
func TestDriftReportedWithoutSelfHeal(t *testing.T) {
	s := newDriftScenario(t, "noheal", driftApp{policy: "{automated: true}"})
	img := pushImage(t, "noheal-app", "v1")
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(3, img.ref())}, "Three replicas")
	s.runLoop()
	s.waitEntry(commit, "the first sync verified")

	scaleWeb(t, s.name, 1)
	want := fmt.Sprintf("Deployment %s/web: spec.replicas git=3 live=1", s.name)
	st := s.waitStoredStatus("the loop reports the drift", func(st *status.App) bool {
		return len(st.Drift) == 1 && st.Drift[0].String() == want
	})
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: s.name, Name: "web"}
	if st.Sync != status.OutOfSync || st.Commit != commit || !cmp.Equal(st.OutOfSync, []object.Ref{web}) {
		t.Errorf("stored status: %s", jsonOf(st))
	}
	if n := webReplicas(t, s.name); n != 1 {
		t.Errorf("replicas = %d after the loop saw the drift, want 1 (left alone)", n)
	}
	if h := s.healEntries(); len(h) != 0 {
		t.Errorf("healed without selfHeal: %s", jsonOf(h))
	}

	d, err := s.r.Diff(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	wantDiff := &reconciler.Diff{App: s.name, Commit: commit, Sync: status.OutOfSync,
		Fields:  []diff.Field{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}},
		Missing: []object.Ref{}, Orphaned: []object.Ref{}}
	if diff := cmp.Diff(wantDiff, d); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	raw, err := json.Marshal(d.Fields[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"object":{"group":"apps","kind":"Deployment","namespace":"noheal","name":"web"}`, `"path":"spec.replicas"`, `"git":3`, `"live":1`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("drift JSON %s lacks %s", raw, k)
		}
	}
}

// 3. A label Git never set is edited on the cluster: no drift. A label
// Git sets, edited in the same patch, is drift.
func TestLabelGitNeverSetIsNotDrift(t *testing.T) {
	s := newDriftScenario(t, "labels", driftApp{policy: "{}"})
	s.push(map[string]string{"app/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {tier: web}\ndata: {k: v}\n"}, "Settings")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	label := func(labels string) {
		t.Helper()
		patch := []byte(`{"metadata":{"labels":` + labels + `}}`)
		if _, err := env.kube.CoreV1().ConfigMaps(s.name).Patch(testCtx, "settings", types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
			t.Fatalf("labelling: %s", err)
		}
	}
	label(`{"owner":"bob","tier":"db"}`)
	var d *reconciler.Diff
	poll.Until(t, 30*time.Second, "the edited label Git sets shows as drift", func() (bool, string) {
		var err error
		if d, err = s.r.Diff(testCtx, s.name); err != nil {
			return false, err.Error()
		}
		return len(d.Fields) > 0, jsonOf(d)
	})
	want := []string{fmt.Sprintf("ConfigMap %s/settings: metadata.labels.tier git=web live=db", s.name)}
	if diff := cmp.Diff(want, driftStrings(d.Fields)); diff != "" {
		t.Errorf("drift after editing owner (Git never set it) and tier (Git sets it) (-want +got):\n%s", diff)
	}

	label(`{"tier":"web"}`) // owner stays bob
	poll.Until(t, 30*time.Second, "in sync again with owner=bob still set", func() (bool, string) {
		var err error
		if d, err = s.r.Diff(testCtx, s.name); err != nil {
			return false, err.Error()
		}
		return d.InSync() && d.Sync == status.Synced, jsonOf(d)
	})
	cm, err := env.kube.CoreV1().ConfigMaps(s.name).Get(testCtx, "settings", metav1.GetOptions{})
	if err != nil || cm.Labels["owner"] != "bob" {
		t.Fatalf("the owner label is gone (%v): the in-sync diff proves nothing", err)
	}
	st, _, err := s.r.Status(testCtx, s.name)
	if err != nil || st.Sync != status.Synced || len(st.Drift) != 0 {
		t.Errorf("status: %v; %s", err, jsonOf(st))
	}

	// Git replaces settings with other: other is Missing, settings
	// Orphaned (this app does not prune), and still in the inventory.
	commit := s.push(map[string]string{"app/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"}, "Replace settings")
	if d, err = s.r.Diff(testCtx, s.name); err != nil {
		t.Fatal(err)
	}
	settings := object.Ref{Kind: "ConfigMap", Namespace: s.name, Name: "settings"}
	want2 := &reconciler.Diff{App: s.name, Commit: commit, Sync: status.OutOfSync, Fields: []diff.Field{},
		Missing: []object.Ref{{Kind: "ConfigMap", Namespace: s.name, Name: "other"}}, Orphaned: []object.Ref{settings}}
	if diff := cmp.Diff(want2, d); diff != "" {
		t.Errorf("diff after Git dropped settings (-want +got):\n%s", diff)
	}
	a := ssa.New(dynamic.NewForConfigOrDie(env.cluster.Config()), metadata.NewForConfigOrDie(env.cluster.Config()), env.kube.Discovery())
	inv, err := a.Inventory(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	var got []object.Ref
	for _, o := range inv {
		got = append(got, object.RefOf(o))
	}
	if diff := cmp.Diff([]object.Ref{settings}, got); diff != "" {
		t.Errorf("Inventory (-want +got):\n%s", diff)
	}
}

// 4. A controller keeps fighting on a field: the drift-war guard trips
// and the app is marked Degraded. With an ignore rule, the app settles.
func TestDriftWarThenIgnoreRule(t *testing.T) {
	app := driftApp{policy: "{automated: true, selfHeal: true}", extra: []string{"driftWar: {limit: 2, window: 5m}"}}
	s := newDriftScenario(t, "war", app)
	img := pushImage(t, "war-app", "v1")
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(3, img.ref())}, "Three replicas")
	stop := s.runLoop()
	s.waitEntry(commit, "the first sync verified")

	fight(t, s.name, 1) // another controller wants 1 replica
	want := fmt.Sprintf("drift war on Deployment %s/web field spec.replicas: another controller keeps changing it", s.name)
	st := s.waitStoredStatus("the drift-war guard trips", func(st *status.App) bool {
		return st.Health == verdict.Degraded && strings.HasPrefix(st.HealthReason, want)
	})
	if !strings.Contains(st.HealthReason, "add an ignore rule {object: apps/Deployment/web, pointers: [/spec/replicas]}") {
		t.Errorf("health reason %q does not say how to end the war", st.HealthReason)
	}
	if h := s.healEntries(); len(h) != 2 {
		t.Errorf("%d heals, want the limit (2): %s", len(h), jsonOf(h))
	}

	// A person adds the one-line ignore rule; pinbot restarts with it.
	stop()
	app.extra = append(app.extra, "ignore: [{object: apps/Deployment/web, pointers: [/spec/replicas]}]")
	s.configure(app)
	s.runLoop()
	st = s.waitStoredStatus("settled with the ignore rule", func(st *status.App) bool {
		return st.Sync == status.Synced && st.Health == verdict.Healthy && st.Verified
	})
	heals := len(s.healEntries())
	if len(st.Drift) != 0 || webReplicas(t, s.name) != 1 {
		t.Errorf("settled with drift or healed replicas: replicas %d, status %s", webReplicas(t, s.name), jsonOf(st))
	}

	// Someone edits a field Git sets: the heal restores it and leaves the
	// ignored replicas alone.
	patch := []byte(`{"spec":{"strategy":{"rollingUpdate":{"maxSurge":2}}}}`)
	if _, err := env.kube.AppsV1().Deployments(s.name).Patch(testCtx, "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	var heal *history.Entry
	poll.Until(t, rollout, "maxSurge healed", func() (bool, string) {
		h := s.healEntries()
		heal = h.latest()
		return len(h) > heals, jsonOf(h)
	})
	want = fmt.Sprintf("Deployment %s/web: spec.strategy.rollingUpdate.maxSurge git=1 live=2", s.name)
	if diff := cmp.Diff([]string{want}, driftStrings(heal.Healed)); diff != "" {
		t.Errorf("healed fields (-want +got):\n%s", diff)
	}
	if n := webReplicas(t, s.name); n != 1 {
		t.Errorf("replicas = %d after a heal of the Deployment, want 1: the ignored field was healed", n)
	}
	if n := len(s.healEntries()); n != heals+1 {
		t.Errorf("%d heals, want %d", n, heals+1)
	}
}

// 8. The Git server is unreachable: the app goes to Unknown and nothing is
// applied, even when the cluster drifts meanwhile. When the server
// returns, the loop catches up (heals) with no manual step.
func TestFrozenWhileSourceUnreachable(t *testing.T) {
	needPeers(t)
	proxy := faultproxy.Start(t, strings.TrimPrefix(env.gitea.URL, "http://"), faultproxy.Pass)
	s := newDriftScenario(t, "frozen", driftApp{policy: "{automated: true, selfHeal: true}", viaProxy: proxy,
		extra: []string{fmt.Sprintf("auth: {tokenFile: %q}", env.token)}})
	img := pushImage(t, "frozen-app", "v1")
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(3, img.ref())}, "Three replicas")
	s.runLoop()
	s.waitEntry(commit, "the first sync verified")

	proxy.SetMode(faultproxy.Refuse)
	s.waitStoredStatus("Unknown: source unreachable", func(st *status.App) bool {
		return st.Sync == status.SyncUnknown && st.SourceUnreachableSince != nil && strings.HasPrefix(st.Error, "source unreachable since ")
	})
	entries := len(s.historyNow().Entries)
	scaleWeb(t, s.name, 1)
	want := fmt.Sprintf("Deployment %s/web: spec.replicas git=3 live=1", s.name)
	st := s.waitStoredStatus("the drift seen while frozen", func(st *status.App) bool {
		return len(st.Drift) == 1 && st.Drift[0].String() == want
	})
	if st.Sync != status.SyncUnknown || st.Health != verdict.HealthUnknown || st.Commit != commit {
		t.Errorf("frozen status: %s", jsonOf(st))
	}
	if n := webReplicas(t, s.name); n != 1 {
		t.Errorf("replicas = %d while the source is unreachable, want 1 (nothing applied)", n)
	}
	if rec := s.historyNow(); len(rec.Entries) != entries {
		t.Errorf("history grew while frozen: %s", jsonOf(rec.Entries))
	}

	proxy.SetMode(faultproxy.Pass)
	var heal *history.Entry
	poll.Until(t, rollout, "caught up: healed once the source is back", func() (bool, string) {
		heal = s.healEntries().latest()
		n := webReplicas(t, s.name)
		return n == 3 && heal != nil, fmt.Sprintf("replicas %d, heal %+v", n, heal)
	})
	if heal.Commit != commit || len(heal.Healed) != 1 || heal.Healed[0].String() != want {
		t.Errorf("heal entry %s", jsonOf(heal))
	}
	st = s.waitStoredStatus("Synced and Healthy again", func(st *status.App) bool {
		return st.Sync == status.Synced && st.Health == verdict.Healthy && st.SourceUnreachableSince == nil
	})
	if st.Error != "" {
		t.Errorf("status error %q after catching up", st.Error)
	}
}

// When the Kubernetes API does not answer, a pass stops and the status
// says since when (the loop retries with backoff); nothing is diffed
// against a cluster pinbot cannot read.
func TestClusterUnreachable(t *testing.T) {
	s := newDriftScenario(t, "apidown", driftApp{policy: "{automated: true, selfHeal: true}"})
	s.push(map[string]string{"app/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n"}, "Settings")
	cfg, err := config.Load(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	dead := rest.CopyConfig(env.cluster.Config())
	dead.Host = "https://127.0.0.1:1" // nothing listens there
	r, err := reconciler.New(cfg, dead, reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, _, err := r.Status(testCtx, s.name)
	if err == nil || st.ClusterUnreachableSince == nil || !strings.HasPrefix(st.Error, "kubernetes API unreachable since ") || st.Sync != status.SyncUnknown ||
		st.Proof != verdict.Unknown {
		t.Fatalf("status with the API down: %v; %s", err, jsonOf(st))
	}
	again, _, err := r.Status(testCtx, s.name)
	if err == nil || again.ClusterUnreachableSince == nil || !again.ClusterUnreachableSince.Equal(*st.ClusterUnreachableSince) {
		t.Errorf("second pass: %v; unreachable since %v, want %v", err, again.ClusterUnreachableSince, st.ClusterUnreachableSince)
	}
	if d, err := r.Diff(testCtx, s.name); err == nil {
		t.Errorf("diff with the API down: %s, want an error", jsonOf(d))
	}
}
