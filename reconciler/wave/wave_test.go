package wave

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// phasedString renders waves as "phase wave: Kind/name ...".
func phasedString(waves []Wave) []string {
	var out []string
	for i, s := range planString(waves) {
		out = append(out, waves[i].Phase.String()+" "+s)
	}
	return out
}

func TestPlanWavesHooks(t *testing.T) {
	crd := fixture.Obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil)
	deploy := fixture.Obj("apps/v1", "Deployment", "web", "api", nil)
	migrate := fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "migrate", nil), hook.AnnotationHelmHook+"=pre-install,pre-upgrade", hook.AnnotationHelmHookWeight+"=5")
	seed := fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "seed", nil), hook.AnnotationArgoHook+"=PreSync")
	sa := fixture.WithAnnotations(fixture.Obj("v1", "ServiceAccount", "web", "migrator", nil), hook.AnnotationHelmHook+"=pre-install", hook.AnnotationHelmHookWeight+"=-5")
	notify := fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "notify", nil), hook.AnnotationHelmHook+"=post-install")
	smoke := fixture.WithAnnotations(fixture.Obj("v1", "Pod", "web", "smoke", nil), hook.AnnotationArgoHook+"=PostSync", AnnotationArgoSyncWave+"=-3")
	test := fixture.WithAnnotations(fixture.Obj("v1", "Pod", "web", "test", nil), hook.AnnotationHelmHook+"=test")
	skip := fixture.ConfigMap("skipped", hook.AnnotationArgoHook+"=Skip")
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{
		{"pre hooks first, by weight, then the waves, then post hooks; tests and Skip left out",
			[]*unstructured.Unstructured{deploy, fixture.ConfigMap("late", AnnotationSyncWave+"=3"), notify, migrate, test, seed, sa, skip, fixture.ConfigMap("early", AnnotationSyncWave+"=-9")},
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
		{"an Argo CD Sync hook runs in its wave", []*unstructured.Unstructured{deploy, fixture.ConfigMap("sync-hook", hook.AnnotationArgoHook+"=Sync", AnnotationSyncWave+"=1")},
			[]string{"Sync 0: Deployment/api", "Sync 1: ConfigMap/sync-hook"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(tc.objs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, phasedString(got)); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
	_, err := Plan([]*unstructured.Unstructured{
		fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "heavy", nil), hook.AnnotationHelmHook+"=pre-install", hook.AnnotationHelmHookWeight+"=high"),
		fixture.ConfigMap("typo", hook.AnnotationArgoHook+"=PreSnyc"),
	})
	for _, want := range []string{`Job web/heavy refused: annotation helm.sh/hook-weight: want an integer, got "high"`, `ConfigMap web/typo refused: annotation argocd.argoproj.io/hook: unknown phase "PreSnyc"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PlanWaves error %v, want it to contain %q", err, want)
		}
	}
}

func TestWaveErrorNamesThePhase(t *testing.T) {
	e := &Error{Phase: hook.PreSync, Wave: 0, Object: object.Ref{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}, Message: "BackoffLimitExceeded"}
	if got, want := e.Error(), "PreSync wave 0: Job web/migrate failed: BackoffLimitExceeded"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// planString renders waves as "wave: Kind/name ...".
func planString(waves []Wave) []string {
	var out []string
	for _, w := range waves {
		var names []string
		for _, o := range w.Objects {
			names = append(names, o.GetKind()+"/"+o.GetName())
		}
		out = append(out, fmt.Sprintf("%d: %s", w.Number, strings.Join(names, " ")))
	}
	return out
}

func TestPlanWaves(t *testing.T) {
	ns := fixture.Obj("v1", "Namespace", "", "extra", nil)
	crd := fixture.WithAnnotations(fixture.Obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil), AnnotationSyncWave+"=3")
	job := fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "migrate", nil), AnnotationSyncWave+"=-1")
	deploy := fixture.Obj("apps/v1", "Deployment", "web", "api", nil)
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{
		{"nothing", nil, nil},
		{"default wave is 0, render order kept", []*unstructured.Unstructured{fixture.ConfigMap("b"), fixture.ConfigMap("a")}, []string{"0: ConfigMap/b ConfigMap/a"}},
		{"ascending waves", []*unstructured.Unstructured{deploy, fixture.ConfigMap("late", AnnotationSyncWave+"=10"), job, fixture.ConfigMap("first", AnnotationSyncWave+"= -1 ")},
			[]string{"-1: Job/migrate ConfigMap/first", "0: Deployment/api", "10: ConfigMap/late"}},
		{"Argo CD's annotation", []*unstructured.Unstructured{deploy, fixture.ConfigMap("argo", AnnotationArgoSyncWave+"=-2")},
			[]string{"-2: ConfigMap/argo", "0: Deployment/api"}},
		{"pinbot's annotation wins over Argo CD's", []*unstructured.Unstructured{fixture.ConfigMap("both", AnnotationArgoSyncWave+"=-5", AnnotationSyncWave+"=2"), deploy},
			[]string{"0: Deployment/api", "2: ConfigMap/both"}},
		{"Namespaces and CRDs head the first wave whatever they declare", []*unstructured.Unstructured{job, deploy, crd, ns},
			[]string{"-1: CustomResourceDefinition/widgets.example.com Namespace/extra Job/migrate", "0: Deployment/api"}},
		{"only a Namespace", []*unstructured.Unstructured{ns}, []string{"0: Namespace/extra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(tc.objs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, planString(got)); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanWavesRefusesBadAnnotations(t *testing.T) {
	_, err := Plan([]*unstructured.Unstructured{fixture.ConfigMap("ok", AnnotationSyncWave+"=1"), fixture.ConfigMap("typo", AnnotationSyncWave+"=one"), fixture.ConfigMap("argo", AnnotationArgoSyncWave+"=1.5")})
	var ge *guard.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v, want a *GuardError", err)
	}
	for _, want := range []string{
		`ConfigMap web/typo refused: annotation pinbot.dev/sync-wave: want an integer, got "one"`,
		`ConfigMap web/argo refused: annotation argocd.argoproj.io/sync-wave: want an integer, got "1.5"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestWaveProgress(t *testing.T) {
	readyCM := fixture.Obj("v1", "ConfigMap", "web", "settings", nil)
	type result struct {
		State  State
		Object string
		Status string
	}
	for _, tc := range []struct {
		name string
		live []*unstructured.Unstructured
		want result
	}{
		{"all current", []*unstructured.Unstructured{readyCM, fixture.LiveJob("migrate", "Complete=True")}, result{Ready, "", ""}},
		{"a started Job has not completed", []*unstructured.Unstructured{readyCM, fixture.LiveJob("migrate")}, result{Waiting, "Job web/migrate", "InProgress"}},
		{"a Job's SuccessCriteriaMet is not Complete", []*unstructured.Unstructured{fixture.LiveJob("migrate", "SuccessCriteriaMet=True")}, result{Waiting, "Job web/migrate", "InProgress"}},
		{"a failed Job fails the wave", []*unstructured.Unstructured{fixture.LiveJob("ok"), fixture.LiveJob("migrate", "Failed=True")}, result{Failed, "Job web/migrate", "Failed"}},
		{"a missing object is waited for", []*unstructured.Unstructured{readyCM}, result{Waiting, "Job web/gone", "NotFound"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := []*unstructured.Unstructured{}
			for _, l := range tc.live {
				desired = append(desired, fixture.Obj(l.GetAPIVersion(), l.GetKind(), "web", l.GetName(), nil))
			}
			if tc.want.Status == "NotFound" {
				desired = append(desired, fixture.Obj("batch/v1", "Job", "web", "gone", nil))
			}
			live := fixture.LiveMap(tc.live...)
			state, oh := Progress(verdict.AssessHealth(&verdict.Snapshot{Desired: desired, Live: live}), live)
			got := result{State: state, Status: oh.Status}
			if oh.Object != (object.Ref{}) {
				got.Object = oh.Object.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s (message %q)", diff, oh.Message)
			}
		})
	}
}

func TestWaveErrorNamesTheObject(t *testing.T) {
	job := object.Ref{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Wave: -1, Object: job, Status: "Failed", Message: "Job Failed. failed: 1/1"}, "wave -1: Job web/migrate failed: Job Failed. failed: 1/1"},
		{&Error{Wave: 0, Object: job, Status: "InProgress", Message: "Job has not completed", Timeout: 300e9}, "wave 0: Job web/migrate not ready after 5m0s: InProgress: Job has not completed"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
