package reconciler_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/render"
)

const rollout = 90 * time.Second // bound on a rollout on the simulated node

// 1. A merged digest syncs, rolls out and verifies, and the history and
// the Gitea commit status show it; the promotion pull request gets the
// verification as a comment.
func TestMergedDigestIsVerified(t *testing.T) {
	s := newScenario(t, "merged", "{automated: true}")
	v1, v2 := pushImage(t, "merged-app", "v1"), pushImage(t, "merged-app", "v2")
	first := s.push(map[string]string{"app/deploy.yaml": deployment(2, v1.repo+":v1@"+v1.digest), "README.md": "manifests\n"}, "Initial")

	s.run()
	s.waitEntry(first, "the first commit verified")

	// A promotion pull request, as pinbot promote opens it, merged by a
	// reviewer.
	if _, err := env.gitea.Commit(testCtx, org, s.name, "main", "pinbot/merged/app", map[string]string{"app/deploy.yaml": deployment(2, v2.repo+":v2@"+v2.digest)}, "Promote merged-app to v2"); err != nil {
		t.Fatal(err)
	}
	pr, err := env.forge.CreatePull(testCtx, s.repo, gitforge.Pull{Head: "pinbot/merged/app", Base: "main",
		Title: "Promote merged-app to v2", Body: "Promote.\n<!-- pinbot:promotion -->"})
	if err != nil {
		t.Fatal(err)
	}
	merge, err := env.gitea.MergePull(testCtx, org, s.name, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.r.Trigger(s.name); err != nil {
		t.Fatal(err)
	}
	rec := s.waitEntry(merge, "the merged promotion verified")

	e := rec.Entries[0]
	if diff := cmp.Diff([]history.DigestCount{{Digest: v2.digest, Pods: 2}}, e.Digests); diff != "" {
		t.Errorf("verified digests (-want +got):\n%s", diff)
	}
	if e.Result != history.Applied || e.Trigger != "auto" || e.Health != verdict.Healthy || len(rec.Entries) != 2 || rec.Entries[1].Commit != first {
		t.Errorf("history = %+v", rec.Entries)
	}
	want := "2/2 Pods run " + v2.digest[:len("sha256:")+12] + "…"
	poll.Until(t, 10*time.Second, "commit status success", func() (bool, string) {
		st := s.commitStatus(merge)
		return st != nil && st.State == "success" && st.Description == want, indentStatus(st)
	})
	comments, err := env.forge.Comments(testCtx, s.repo, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || !strings.Contains(comments[0], "**pinbot verified `merged`**") || !strings.Contains(comments[0], want) {
		t.Errorf("pull request comments = %q, want one verification", comments)
	}
	if rec.Status == nil || !rec.Status.Verified || rec.Status.Sync != status.Synced || rec.Status.SyncedCommit != merge {
		t.Errorf("persisted status = %+v", rec.Status)
	}

	v, err := s.r.Verify(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Verified || v.Commit != merge || len(v.Containers) != 2 {
		t.Fatalf("verification = %+v", v)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest || c.RunningDigest != v2.digest || c.Verdict != verdict.Verified || c.Namespace != s.name {
			t.Errorf("container %+v, want %s verified", c, v2.digest)
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var keys struct {
		App        *string                      `json:"app"`
		Commit     *string                      `json:"commit"`
		Verified   *bool                        `json:"verified"`
		Containers []map[string]json.RawMessage `json:"containers"`
	}
	if err := json.Unmarshal(raw, &keys); err != nil || keys.App == nil || keys.Commit == nil || keys.Verified == nil {
		t.Fatalf("verification JSON %s lacks app, commit or verified", raw)
	}
	for _, k := range []string{"namespace", "pod", "container", "gitDigest", "runningDigest", "verdict"} {
		if _, ok := keys.Containers[0][k]; !ok {
			t.Errorf("container JSON %s lacks %q", raw, k)
		}
	}
}

// 2. A bad release (readiness fails) shows Synced with Progressing
// health while the old Pods keep serving; a revert in Git brings back
// Healthy and Verified.
func TestBadReleaseThenRevert(t *testing.T) {
	s := newScenario(t, "badrelease", "{automated: false}")
	good, bad := pushImage(t, "badrelease-app", "good"), pushImage(t, "badrelease-app", "bad")
	env.node.FailReadiness(kubeletsim.UsesImage(bad.digest))
	t.Cleanup(func() { env.node.FailReadiness(nil) })

	s.push(map[string]string{"app/deploy.yaml": deployment(2, good.ref())}, "Good release")
	st, _, err := s.r.Status(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sync != status.OutOfSync || st.Health != verdict.Missing || len(s.inventory()) != 0 {
		t.Fatalf("detect-only app before a sync: %s; inventory %q", describe(st, nil), s.inventory())
	}
	st, v, err := s.r.Sync(testCtx, s.name, rollout)
	if err != nil || !st.Verified || st.Health != verdict.Healthy || st.Sync != status.Synced {
		t.Fatalf("syncing the good release: %v; %s", err, describe(st, v))
	}

	badCommit := s.push(map[string]string{"app/deploy.yaml": deployment(2, bad.ref())}, "Bad release")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	st, v = s.waitStatus(rollout, "the bad Pod running but not ready", func(st *status.App, v *verdict.Verification) bool {
		return st.Sync == status.Synced && st.Health == verdict.Progressing && len(v.Containers) == 1 && v.Containers[0].Verdict == verdict.Verified
	})
	if st.Verified || st.Commit != badCommit {
		t.Errorf("bad release verified: %s", describe(st, v))
	}
	if n := s.readyPods(good.ref()); n != 2 {
		t.Errorf("%d old Pods ready, want 2 still serving", n)
	}
	if len(v.OldRevisions) != 2 || v.OldRevisions[0].RunningDigest != good.digest {
		t.Errorf("old revisions = %+v, want the 2 good Pods listed apart", v.OldRevisions)
	}

	revert := s.push(map[string]string{"app/deploy.yaml": deployment(2, good.ref())}, "Revert the bad release")
	st, v, err = s.r.Sync(testCtx, s.name, rollout)
	if err != nil || !st.Verified || st.Health != verdict.Healthy || st.Commit != revert {
		t.Fatalf("syncing the revert: %v; %s", err, describe(st, v))
	}
	rec, err := s.r.History(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rec.Entries {
		got = append(got, e.Commit[:7]+" "+string(e.Result)+" verified="+boolString(e.Verified)+" final="+boolString(e.Final))
	}
	want := []string{revert[:7] + " Applied verified=true final=true", badCommit[:7] + " Applied verified=false final=true", rec.Entries[2].Commit[:7] + " Applied verified=true final=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if st := s.commitStatus(badCommit); st == nil || st.State == "success" || st.State == "pending" {
		t.Errorf("bad commit status = %s, want it settled as not verified", indentStatus(st))
	}
}

// 3. An image missing from the registry leaves the app Degraded, with the
// pull error as the reason.
func TestMissingImageIsDegraded(t *testing.T) {
	s := newScenario(t, "missing", "{automated: true}")
	img := pushImage(t, "missing-app", "v1")
	sum := sha256.Sum256([]byte("never pushed"))
	ghost := img.repo + "@sha256:" + hex.EncodeToString(sum[:])
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(1, ghost)}, "Pin an image that is not there")
	s.run()
	poll.Until(t, rollout, "the loop stores Degraded", func() (bool, string) {
		rec, err := s.r.History(testCtx, s.name)
		if err != nil || rec.Status == nil {
			return false, fmt.Sprint(err)
		}
		return rec.Status.Health == verdict.Degraded, describe(rec.Status, nil)
	})
	st, v, err := s.r.Status(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.HealthReason, "Deployment missing/web: pod web-") ||
		!strings.Contains(st.HealthReason, "ErrImagePull") && !strings.Contains(st.HealthReason, "ImagePullBackOff") {
		t.Errorf("health reason %q, want the Pod's pull error", st.HealthReason)
	}
	if st.Verified || len(v.Containers) != 1 || v.Containers[0].Verdict != verdict.Pending {
		t.Errorf("verification: %s", describe(st, v))
	}
	poll.Until(t, 10*time.Second, "commit status failure", func() (bool, string) {
		cs := s.commitStatus(commit)
		return cs != nil && cs.State == "failure" && strings.HasPrefix(cs.Description, "Degraded: Deployment missing/web: pod web-"), indentStatus(cs)
	})
}

// 4. A node that kept a stale image yields Mismatch, naming the Pod, the
// running digest and the digest in Git.
func TestStaleNodeImageIsMismatch(t *testing.T) {
	s := newScenario(t, "stale", "{}")
	old, cur := pushImage(t, "stale-app", "v1"), pushImage(t, "stale-app", "v2")
	if err := env.node.StaleImage(cur.repo, old.digest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.node.StaleImage(cur.repo, "") })
	s.push(map[string]string{"app/deploy.yaml": deployment(2, cur.ref())}, "Pin v2")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	st, v := s.waitStatus(rollout, "both Pods judged", func(_ *status.App, v *verdict.Verification) bool {
		return len(v.Containers) == 2 && v.Containers[0].Verdict == verdict.Mismatch && v.Containers[1].Verdict == verdict.Mismatch
	})
	for _, c := range v.Containers {
		if !strings.HasPrefix(c.Pod, "web-") || c.RunningDigest != old.digest || c.GitDigest != cur.digest ||
			c.Reason != "running "+old.digest+", Git "+cur.digest {
			t.Errorf("container verdict %+v", c)
		}
	}
	if st.Verified || !strings.HasPrefix(st.Verification, "Mismatch: pod web-") {
		t.Errorf("status: %s", describe(st, v))
	}
}

// 5. The config-digest imageID form verifies against a multi-arch index
// pin, for the Node's platform; so does the platform-manifest form.
func TestConfigDigestAgainstIndex(t *testing.T) {
	s := newScenario(t, "configdigest", "{}")
	idx := pushIndex(t, "multi-app", "v1")
	arm := kubeletsim.New(env.cluster.Config(), kubeletsim.WithNodeName("sim-arm64"), kubeletsim.WithPlatform("linux", "arm64", "v8"),
		kubeletsim.WithImageIDForm(kubeletsim.ConfigDigest), kubeletsim.WithBasicAuth(env.gitea.RegistryHost, env.gitea.AdminUser, env.gitea.Token))
	if err := arm.Start(testCtx); err != nil {
		t.Fatalf("starting the arm64 node: %s", err)
	}
	t.Cleanup(arm.Stop)
	s.push(map[string]string{"app/deploy.yaml": deploymentOn("arm64", 2, idx.repo+":v1@"+idx.digest)}, "Pin the index")
	st, v, err := s.r.Sync(testCtx, s.name, rollout)
	if err != nil || !st.Verified {
		t.Fatalf("sync: %v; %s", err, describe(st, v))
	}
	for _, c := range v.Containers {
		if c.RunningDigest != idx.configs["arm64"] || c.GitDigest != idx.digest || c.Verdict != verdict.Verified || !strings.Contains(c.Reason, "config digest") {
			t.Errorf("container %+v, want the arm64 config digest %s verified", c, idx.configs["arm64"])
		}
	}
	arm.SetImageIDForm(kubeletsim.PlatformDigest)
	_, v = s.waitStatus(rollout, "verified through the arm64 child", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && len(v.Containers) == 2 && v.Containers[0].RunningDigest == idx.children["arm64"]
	})
	if !strings.Contains(v.Containers[0].Reason, "linux/arm64 child of the pinned index") {
		t.Errorf("reason %q", v.Containers[0].Reason)
	}
}

// 6. A render error or a forbidden namespace means nothing is applied, and
// the status names why.
func TestRefusedSyncAppliesNothing(t *testing.T) {
	s := newScenario(t, "refused", "{automated: true}")
	img := pushImage(t, "refused-app", "v1")
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n"
	for _, tc := range []struct {
		name   string
		files  map[string]string
		target any
		want   string
	}{
		{"render error", map[string]string{"app/a-settings.yaml": cm, "app/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web\n"},
			new(*render.Error), "render: app/deploy.yaml:"},
		{"forbidden namespace", map[string]string{"app/a-settings.yaml": cm, "app/deploy.yaml": deployment(1, img.ref()),
			"app/evil.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil, namespace: kube-system}\n"},
			new(*guard.Error), `ConfigMap kube-system/evil refused: namespace "kube-system" is not in allowNamespaces [refused]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit := s.push(tc.files, tc.name)
			st, _, err := s.r.Sync(testCtx, s.name, 0)
			if err == nil || !errors.As(err, tc.target) {
				t.Fatalf("Sync error = %v, want a %T", err, tc.target)
			}
			if !strings.Contains(st.Error, tc.want) || st.Commit != commit {
				t.Errorf("status error %q at %s, want it to name %q at %s", st.Error, st.Commit, tc.want, commit)
			}
			if inv := s.inventory(); len(inv) != 0 {
				t.Errorf("applied %q despite the refusal", inv)
			}
			rec, err := s.r.History(testCtx, s.name)
			if err != nil {
				t.Fatal(err)
			}
			if e := rec.Entries[0]; e.Commit != commit || e.Result != history.Refused || !strings.Contains(e.Reason, tc.want) {
				t.Errorf("history entry %+v", e)
			}
			if rec.Status == nil || !strings.Contains(rec.Status.Error, tc.want) {
				t.Errorf("persisted status %+v", rec.Status)
			}
			if cs := s.commitStatus(commit); cs == nil || cs.State != "failure" || !strings.Contains(cs.Description, tc.want[:20]) {
				t.Errorf("commit status %s", indentStatus(cs))
			}
		})
	}
}

// run runs the reconcile loop until the test ends.
func (s *scenario) run() {
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan error, 1)
	go func() { done <- s.r.RunUntil(ctx, ctx.Done()) }()
	s.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("Run: %s", err)
		}
	})
}

func (s *scenario) waitEntry(commit, what string) *history.Record {
	s.t.Helper()
	var rec *history.Record
	poll.Until(s.t, rollout, what, func() (bool, string) {
		var err error
		rec, err = s.r.History(testCtx, s.name)
		if err != nil {
			return false, err.Error()
		}
		if len(rec.Entries) == 0 {
			return false, "no history"
		}
		e := rec.Entries[0]
		raw, _ := json.Marshal(rec)
		return e.Commit == commit && e.Verified && e.Final, string(raw)
	})
	return rec
}

func indentStatus(st *gitforge.Status) string {
	if st == nil {
		return "no status"
	}
	return string(st.State) + ": " + st.Description
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// A sync of 500 objects applies them all and then reads Synced; the time
// is logged for comparison with the benchmark target (10 s), not gated.
func TestSyncManyObjects(t *testing.T) {
	s := newScenario(t, "many", "{}")
	files := map[string]string{}
	for i := range 500 {
		files[fmt.Sprintf("app/cm-%03d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d}\ndata: {n: %q}\n", i, fmt.Sprint(i))
	}
	s.push(files, "500 objects")
	began := time.Now()
	st, _, err := s.r.Sync(testCtx, s.name, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sync of 500 objects: %s", time.Since(began).Round(time.Millisecond))
	if st.Sync != status.Synced || st.Health != verdict.Healthy || len(s.inventory()) != 500 {
		t.Errorf("after the sync: %s; %d objects in the inventory", describe(st, nil), len(s.inventory()))
	}
	began = time.Now()
	if st, _, err = s.r.Status(testCtx, s.name); err != nil || st.Sync != status.Synced {
		t.Errorf("status: %v, %s", err, describe(st, nil))
	}
	t.Logf("status pass over 500 objects: %s", time.Since(began).Round(time.Millisecond))
}

// Namespaces and CRDs go first: a custom resource listed before its CRD,
// and a ConfigMap in a namespace the same render creates, apply in one sync.
func TestNamespacesAndCRDsFirst(t *testing.T) {
	s := newScenario(t, "crds", "{}", "allowNamespaces: [crds, crds-extra]",
		"allowClusterScoped: [apiextensions.k8s.io/CustomResourceDefinition]")
	s.push(map[string]string{
		"app/a-widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n",
		"app/b-extra.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: crds-extra}\n",
		"app/c-ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: crds-extra}\n",
		"app/d-crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`,
	}, "A CRD and its first object")
	st, _, err := s.r.Sync(testCtx, s.name, 0)
	if err != nil {
		t.Fatalf("sync: %s", err)
	}
	if st.Sync != status.Synced || st.Health != verdict.Healthy {
		t.Errorf("after the sync: %s", describe(st, nil))
	}
	if _, err := env.kube.CoreV1().ConfigMaps("crds-extra").Get(testCtx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap in the new namespace: %s", err)
	}
}

// When Git cannot be fetched, the app is Unknown, says since when, and
// nothing is applied.
func TestSourceUnreachable(t *testing.T) {
	needPeers(t)
	cfgFile := filepath.Join(t.TempDir(), "pinbot.yaml")
	cfgText := "apps:\n  - {name: gone, repo: 'http://127.0.0.1:1/team/gone.git', namespace: gone, syncPolicy: {automated: true}}\n"
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconciler.New(cfg, env.cluster.Config(), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, _, err := r.Sync(testCtx, "gone", 0)
	var se *gitsource.Error
	if !errors.As(err, &se) {
		t.Fatalf("Sync error = %v, want a *gitsource.Error", err)
	}
	if st.Sync != status.SyncUnknown || st.Health != verdict.HealthUnknown || st.SourceUnreachableSince == nil ||
		!strings.HasPrefix(st.Error, "source unreachable since ") {
		t.Errorf("status: %s", describe(st, nil))
	}
	rec, err := r.History(testCtx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Entries) != 0 || rec.Status == nil || rec.Status.Sync != status.SyncUnknown {
		t.Errorf("history %+v, status %+v: want no sync and the Unknown status stored", rec.Entries, rec.Status)
	}
}

// A repository that links to manifests outside it (and to /dev/zero,
// which took every app down by memory once) syncs its own manifests
// alone: the links are never followed, the pass ends, and nothing of
// the outside manifest reaches the cluster.
func TestHostileRepositoryRender(t *testing.T) {
	s := newScenario(t, "hostile", "{automated: true}")
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: outside}\ndata: {secret: leaked}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := s.push(map[string]string{
		"app/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside}\n",
		"app/outside.yaml": "symlink:" + outside,
		"app/zero.yaml":    "symlink:/dev/zero",
		"app/up":           "symlink:" + filepath.Dir(outside),
	}, "links out")
	s.run()
	s.waitStatus(rollout, "the repository's own manifests synced", func(st *status.App, _ *verdict.Verification) bool {
		return st.Sync == status.Synced && st.SyncedCommit == head
	})
	if got := s.inventory(); !slices.Equal(got, []string{"ConfigMap/inside"}) {
		t.Errorf("inventory = %q, want the repository's ConfigMap alone", got)
	}
}
