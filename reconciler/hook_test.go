package reconciler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// stamp is u as pinbot applies it for app "web".
func stamp(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return ssa.Stamp(u, "web")
}

func TestHookOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     []string
		want    Hook
		wantErr string
	}{
		{"no annotation", nil, Hook{Phase: PhaseSync}, ""},
		{"helm pre-install", []string{AnnotationHelmHook + "=pre-install"}, Hook{Phase: PhasePreSync, IsHook: true}, ""},
		{"helm pre and post: the earliest", []string{AnnotationHelmHook + "=post-upgrade, pre-upgrade"}, Hook{Phase: PhasePreSync, IsHook: true}, ""},
		{"helm post-install", []string{AnnotationHelmHook + "=post-install,post-upgrade"}, Hook{Phase: PhasePostSync, IsHook: true}, ""},
		{"helm test hook is skipped", []string{AnnotationHelmHook + "=test"}, Hook{Phase: PhaseSkip, IsHook: true}, ""},
		{"helm delete-only hook is skipped", []string{AnnotationHelmHook + "=pre-delete,post-rollback"}, Hook{Phase: PhaseSkip, IsHook: true}, ""},
		{"argo PreSync", []string{AnnotationArgoHook + "=PreSync"}, Hook{Phase: PhasePreSync, IsHook: true}, ""},
		{"argo Sync is a hook of the sync's waves", []string{AnnotationArgoHook + "=Sync"}, Hook{Phase: PhaseSync, IsHook: true}, ""},
		{"argo PostSync", []string{AnnotationArgoHook + "=PostSync"}, Hook{Phase: PhasePostSync, IsHook: true}, ""},
		{"argo Skip", []string{AnnotationArgoHook + "=Skip"}, Hook{Phase: PhaseSkip, IsHook: true}, ""},
		{"argo SyncFail only is not run", []string{AnnotationArgoHook + "=SyncFail"}, Hook{Phase: PhaseSkip, IsHook: true}, ""},
		{"argo wins over helm", []string{AnnotationArgoHook + "=PostSync", AnnotationHelmHook + "=pre-install"}, Hook{Phase: PhasePostSync, IsHook: true}, ""},
		{"argo typo", []string{AnnotationArgoHook + "=Presync"}, Hook{}, `annotation argocd.argoproj.io/hook: unknown phase "Presync"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HookOf(cm("x", tc.ann...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "ConfigMap web/x") {
					t.Fatalf("error %v, want one naming ConfigMap web/x and saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("HookOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// phasedString renders waves as "phase wave: Kind/name ...".
func phasedString(waves []Wave) []string {
	var out []string
	for i, s := range planString(waves) {
		out = append(out, waves[i].Phase.String()+" "+s)
	}
	return out
}

func TestPlanWavesHooks(t *testing.T) {
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil)
	deploy := obj("apps/v1", "Deployment", "web", "api", nil)
	migrate := withAnnotations(obj("batch/v1", "Job", "web", "migrate", nil), AnnotationHelmHook+"=pre-install,pre-upgrade", AnnotationHelmHookWeight+"=5")
	seed := withAnnotations(obj("batch/v1", "Job", "web", "seed", nil), AnnotationArgoHook+"=PreSync")
	sa := withAnnotations(obj("v1", "ServiceAccount", "web", "migrator", nil), AnnotationHelmHook+"=pre-install", AnnotationHelmHookWeight+"=-5")
	notify := withAnnotations(obj("batch/v1", "Job", "web", "notify", nil), AnnotationHelmHook+"=post-install")
	smoke := withAnnotations(obj("v1", "Pod", "web", "smoke", nil), AnnotationArgoHook+"=PostSync", AnnotationArgoSyncWave+"=-3")
	test := withAnnotations(obj("v1", "Pod", "web", "test", nil), AnnotationHelmHook+"=test")
	skip := cm("skipped", AnnotationArgoHook+"=Skip")
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{
		{"pre hooks first, by weight, then the waves, then post hooks; tests and Skip left out",
			[]*unstructured.Unstructured{deploy, cm("late", AnnotationSyncWave+"=3"), notify, migrate, test, seed, sa, skip, cm("early", AnnotationSyncWave+"=-9")},
			[]string{
				"PreSync -5: ServiceAccount/migrator",
				"PreSync 0: Job/seed",
				"PreSync 5: Job/migrate",
				"Sync -9: ConfigMap/early",
				"Sync 0: Deployment/api",
				"Sync 3: ConfigMap/late",
				"PostSync 0: Job/notify",
			}},
		{"a hook's sync wave wins over its weight", []*unstructured.Unstructured{notify, smoke, deploy},
			[]string{"Sync 0: Deployment/api", "PostSync -3: Pod/smoke", "PostSync 0: Job/notify"}},
		{"CRDs of crds/ head the pre-install hooks", []*unstructured.Unstructured{deploy, migrate, crd},
			[]string{"PreSync 5: CustomResourceDefinition/widgets.example.com Job/migrate", "Sync 0: Deployment/api"}},
		{"an Argo CD Sync hook runs in its wave", []*unstructured.Unstructured{deploy, cm("sync-hook", AnnotationArgoHook+"=Sync", AnnotationSyncWave+"=1")},
			[]string{"Sync 0: Deployment/api", "Sync 1: ConfigMap/sync-hook"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanWaves(tc.objs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, phasedString(got)); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
	_, err := PlanWaves([]*unstructured.Unstructured{
		withAnnotations(obj("batch/v1", "Job", "web", "heavy", nil), AnnotationHelmHook+"=pre-install", AnnotationHelmHookWeight+"=high"),
		cm("typo", AnnotationArgoHook+"=PreSnyc"),
	})
	for _, want := range []string{`Job web/heavy refused: annotation helm.sh/hook-weight: want an integer, got "high"`, `ConfigMap web/typo refused: annotation argocd.argoproj.io/hook: unknown phase "PreSnyc"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PlanWaves error %v, want it to contain %q", err, want)
		}
	}
}

func TestWaveErrorNamesThePhase(t *testing.T) {
	e := &WaveError{Phase: PhasePreSync, Wave: 0, Object: ObjectRef{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}, Message: "BackoffLimitExceeded"}
	if got, want := e.Error(), "PreSync wave 0: Job web/migrate failed: BackoffLimitExceeded"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestHookAction(t *testing.T) {
	job := withAnnotations(obj("batch/v1", "Job", "web", "migrate", map[string]any{"spec": map[string]any{"backoffLimit": int64(0)}}), AnnotationHelmHook+"=pre-install")
	sa := withAnnotations(obj("v1", "ServiceAccount", "web", "migrator", nil), AnnotationHelmHook+"=pre-install")
	// applied is u as pinbot applied it for app "web", with status.
	applied := func(u *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
		s, err := stamp(u)
		if err != nil {
			t.Fatal(err)
		}
		if status != nil {
			s.Object["status"] = status
		}
		return s
	}
	changed := job.DeepCopy()
	changed.Object["spec"] = map[string]any{"backoffLimit": int64(2)}
	changedSA := sa.DeepCopy()
	changedSA.SetLabels(map[string]string{"v": "2"})
	complete := map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
	failed := map[string]any{"conditions": []any{map[string]any{"type": "Failed", "status": "True"}}}
	for _, tc := range []struct {
		name          string
		desired, live *unstructured.Unstructured
		rerunFailed   bool
		want          hookStep
	}{
		{"absent: create", job, nil, false, hookCreate},
		{"the same render, completed: kept, not run again", job, applied(job, complete), false, hookKeep},
		{"the same render, still running: kept", job, applied(job, nil), true, hookKeep},
		{"the same render, failed, loop: kept failed", job, applied(job, failed), false, hookKeep},
		{"the same render, failed, pinbot sync: run again", job, applied(job, failed), true, hookReplace},
		{"a changed Job: replaced", changed, applied(job, complete), false, hookReplace},
		{"a changed ServiceAccount: updated in place", changedSA, applied(sa, nil), false, hookUpdate},
		{"the same ServiceAccount: kept", sa, applied(sa, nil), true, hookKeep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hookAction("web", tc.desired, tc.live, tc.rerunFailed)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hookAction = %d, want %d", got, tc.want)
			}
		})
	}
	other := applied(job, complete)
	other.SetLabels(map[string]string{LabelApp: "other"})
	if got, _ := hookAction("web", job, other, false); got != hookReplace {
		t.Errorf("hookAction on a Job of app other = %d, want replace", got)
	}
}

func TestArgoAnnotationsInPrune(t *testing.T) {
	app := &App{Name: "web", Namespace: "web", AllowNamespaces: []string{"web"}}
	inv := []*unstructured.Unstructured{
		owned(cm("argo-keep", AnnotationArgoSyncOptions+"=ServerSideApply=true, Prune=false")),
		owned(cm("argo-other", AnnotationArgoSyncOptions+"=Prune=true")),
		owned(cm("extraneous", AnnotationArgoCompareOptions+"=IgnoreExtraneous")),
	}
	got, err := PlanPrune(app, []*unstructured.Unstructured{cm("a")}, inv)
	if err != nil {
		t.Fatal(err)
	}
	want := PrunePlan{
		Delete: []ObjectRef{{Kind: "ConfigMap", Namespace: "web", Name: "argo-other"}, {Kind: "ConfigMap", Namespace: "web", Name: "extraneous"}},
		Keep:   []KeptObject{{ObjectRef{Kind: "ConfigMap", Namespace: "web", Name: "argo-keep"}, "annotation argocd.argoproj.io/sync-options: Prune=false"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		ann  string
		want bool
	}{
		{AnnotationArgoCompareOptions + "=IgnoreExtraneous", true},
		{AnnotationArgoCompareOptions + "=ServerSideDiff=true,IgnoreExtraneous", true},
		{AnnotationArgoCompareOptions + "=IgnoreExtraneousX", false},
		{AnnotationArgoSyncOptions + "=IgnoreExtraneous", false},
	} {
		if got := ignoreExtraneous(cm("x", tc.ann)); got != tc.want {
			t.Errorf("ignoreExtraneous(%s) = %t, want %t", tc.ann, got, tc.want)
		}
	}
}

func TestHooksAreNeitherComparedNorHealedNorObserved(t *testing.T) {
	deploy := gitDeployment("api", "reg/app@sha256:"+strings.Repeat("a", 64))
	hook := withAnnotations(obj("batch/v1", "Job", "web", "migrate", nil), AnnotationHelmHook+"=pre-install")
	d, err := stamp(deploy)
	if err != nil {
		t.Fatal(err)
	}
	// The hook Job is gone (its TTL deleted it): the app is still Synced.
	state, out, err := Compare("web", []*unstructured.Unstructured{deploy, hook}, liveMap(d))
	if err != nil || state != Synced || len(out) != 0 {
		t.Errorf("Compare = %s %v %v, want Synced", state, out, err)
	}
	if got := names(withoutHooks([]*unstructured.Unstructured{hook, deploy, cm("c")})); !cmp.Equal(got, []string{"Deployment web/api", "ConfigMap web/c"}) {
		t.Errorf("withoutHooks = %q", got)
	}
	if got := names(applicable([]*unstructured.Unstructured{cm("skip", AnnotationArgoHook+"=Skip"), hook, cm("bad", AnnotationArgoHook+"=Nope")})); !cmp.Equal(got, []string{"Job web/migrate", "ConfigMap web/bad"}) {
		t.Errorf("applicable = %q", got)
	}
}
