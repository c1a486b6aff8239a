package reconciler

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// withAnnotations returns u annotated with the given annotations ("key=value").
func withAnnotations(u *unstructured.Unstructured, kv ...string) *unstructured.Unstructured {
	ann := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		ann[k] = v
	}
	u.SetAnnotations(ann)
	return u
}

func cm(name string, ann ...string) *unstructured.Unstructured {
	return withAnnotations(obj("v1", "ConfigMap", "web", name, nil), ann...)
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
	ns := obj("v1", "Namespace", "", "extra", nil)
	crd := withAnnotations(obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil), AnnotationSyncWave+"=3")
	job := withAnnotations(obj("batch/v1", "Job", "web", "migrate", nil), AnnotationSyncWave+"=-1")
	deploy := obj("apps/v1", "Deployment", "web", "api", nil)
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{
		{"nothing", nil, nil},
		{"default wave is 0, render order kept", []*unstructured.Unstructured{cm("b"), cm("a")}, []string{"0: ConfigMap/b ConfigMap/a"}},
		{"ascending waves", []*unstructured.Unstructured{deploy, cm("late", AnnotationSyncWave+"=10"), job, cm("first", AnnotationSyncWave+"= -1 ")},
			[]string{"-1: Job/migrate ConfigMap/first", "0: Deployment/api", "10: ConfigMap/late"}},
		{"Argo CD's annotation", []*unstructured.Unstructured{deploy, cm("argo", AnnotationArgoSyncWave+"=-2")},
			[]string{"-2: ConfigMap/argo", "0: Deployment/api"}},
		{"pinbot's annotation wins over Argo CD's", []*unstructured.Unstructured{cm("both", AnnotationArgoSyncWave+"=-5", AnnotationSyncWave+"=2"), deploy},
			[]string{"0: Deployment/api", "2: ConfigMap/both"}},
		{"Namespaces and CRDs head the first wave whatever they declare", []*unstructured.Unstructured{job, deploy, crd, ns},
			[]string{"-1: CustomResourceDefinition/widgets.example.com Namespace/extra Job/migrate", "0: Deployment/api"}},
		{"only a Namespace", []*unstructured.Unstructured{ns}, []string{"0: Namespace/extra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanWaves(tc.objs)
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
	_, err := PlanWaves([]*unstructured.Unstructured{cm("ok", AnnotationSyncWave+"=1"), cm("typo", AnnotationSyncWave+"=one"), cm("argo", AnnotationArgoSyncWave+"=1.5")})
	var ge *GuardError
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

// liveJob is a live Job with the given conditions ("Complete=True") and a
// start time.
func liveJob(name string, conds ...string) *unstructured.Unstructured {
	var cs []any
	for _, c := range conds {
		typ, st, _ := strings.Cut(c, "=")
		cs = append(cs, map[string]any{"type": typ, "status": st})
	}
	return obj("batch/v1", "Job", "web", name, map[string]any{
		"spec":   map[string]any{"completions": int64(1)},
		"status": map[string]any{"startTime": "2026-01-01T00:00:00Z", "active": int64(1), "conditions": cs},
	})
}

func TestWaveProgress(t *testing.T) {
	readyCM := obj("v1", "ConfigMap", "web", "settings", nil)
	type result struct {
		State  waveState
		Object string
		Status string
	}
	for _, tc := range []struct {
		name string
		live []*unstructured.Unstructured
		want result
	}{
		{"all current", []*unstructured.Unstructured{readyCM, liveJob("migrate", "Complete=True")}, result{waveReady, "", ""}},
		{"a started Job has not completed", []*unstructured.Unstructured{readyCM, liveJob("migrate")}, result{waveWaiting, "Job web/migrate", "InProgress"}},
		{"a Job's SuccessCriteriaMet is not Complete", []*unstructured.Unstructured{liveJob("migrate", "SuccessCriteriaMet=True")}, result{waveWaiting, "Job web/migrate", "InProgress"}},
		{"a failed Job fails the wave", []*unstructured.Unstructured{liveJob("ok"), liveJob("migrate", "Failed=True")}, result{waveFailed, "Job web/migrate", "Failed"}},
		{"a missing object is waited for", []*unstructured.Unstructured{readyCM}, result{waveWaiting, "Job web/gone", "NotFound"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := []*unstructured.Unstructured{}
			for _, l := range tc.live {
				desired = append(desired, obj(l.GetAPIVersion(), l.GetKind(), "web", l.GetName(), nil))
			}
			if tc.want.Status == "NotFound" {
				desired = append(desired, obj("batch/v1", "Job", "web", "gone", nil))
			}
			live := liveMap(tc.live...)
			state, oh := waveProgress(AssessHealth(&Snapshot{Desired: desired, Live: live}), live)
			got := result{State: state, Status: oh.Status}
			if oh.Object != (ObjectRef{}) {
				got.Object = oh.Object.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s (message %q)", diff, oh.Message)
			}
		})
	}
}

func TestWaveErrorNamesTheObject(t *testing.T) {
	job := ObjectRef{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}
	for _, tc := range []struct {
		err  *WaveError
		want string
	}{
		{&WaveError{Wave: -1, Object: job, Status: "Failed", Message: "Job Failed. failed: 1/1"}, "wave -1: Job web/migrate failed: Job Failed. failed: 1/1"},
		{&WaveError{Wave: 0, Object: job, Status: "InProgress", Message: "Job has not completed", Timeout: 300e9}, "wave 0: Job web/migrate not ready after 5m0s: InProgress: Job has not completed"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
