package hook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/object"
)

func TestHookOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     []string
		want    Hook
		wantErr string
	}{
		{"no annotation", nil, Hook{Phase: Sync}, ""},
		{"helm pre-install", []string{AnnotationHelmHook + "=pre-install"}, Hook{Phase: PreSync, IsHook: true}, ""},
		{"helm pre and post: the earliest", []string{AnnotationHelmHook + "=post-upgrade, pre-upgrade"}, Hook{Phase: PreSync, IsHook: true}, ""},
		{"helm post-install", []string{AnnotationHelmHook + "=post-install,post-upgrade"}, Hook{Phase: PostSync, IsHook: true}, ""},
		{"helm test hook is skipped", []string{AnnotationHelmHook + "=test"}, Hook{Phase: Skip, IsHook: true}, ""},
		{"helm delete-only hook is skipped", []string{AnnotationHelmHook + "=pre-delete,post-rollback"}, Hook{Phase: Skip, IsHook: true}, ""},
		{"argo PreSync", []string{AnnotationArgoHook + "=PreSync"}, Hook{Phase: PreSync, IsHook: true}, ""},
		{"argo Sync is a hook of the sync's waves", []string{AnnotationArgoHook + "=Sync"}, Hook{Phase: Sync, IsHook: true}, ""},
		{"argo PostSync", []string{AnnotationArgoHook + "=PostSync"}, Hook{Phase: PostSync, IsHook: true}, ""},
		{"argo Skip", []string{AnnotationArgoHook + "=Skip"}, Hook{Phase: Skip, IsHook: true}, ""},
		{"argo SyncFail only is not run", []string{AnnotationArgoHook + "=SyncFail"}, Hook{Phase: Skip, IsHook: true}, ""},
		{"argo wins over helm", []string{AnnotationArgoHook + "=PostSync", AnnotationHelmHook + "=pre-install"}, Hook{Phase: PostSync, IsHook: true}, ""},
		{"argo typo", []string{AnnotationArgoHook + "=Presync"}, Hook{}, `annotation argocd.argoproj.io/hook: unknown phase "Presync"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(fixture.ConfigMap("x", tc.ann...))
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

func TestHookAction(t *testing.T) {
	job := fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "migrate", map[string]any{"spec": map[string]any{"backoffLimit": int64(0)}}), AnnotationHelmHook+"=pre-install")
	sa := fixture.WithAnnotations(fixture.Obj("v1", "ServiceAccount", "web", "migrator", nil), AnnotationHelmHook+"=pre-install")
	// applied is u as pinbot applied it for app "web", with status.
	applied := func(u *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
		s := fixture.Stamped(u)
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
		want          Step
	}{
		{"absent: create", job, nil, false, Create},
		{"the same render, completed: kept, not run again", job, applied(job, complete), false, Keep},
		{"the same render, still running: kept", job, applied(job, nil), true, Keep},
		{"the same render, failed, loop: kept failed", job, applied(job, failed), false, Keep},
		{"the same render, failed, pinbot sync: run again", job, applied(job, failed), true, Replace},
		{"a changed Job: replaced", changed, applied(job, complete), false, Replace},
		{"a changed ServiceAccount: updated in place", changedSA, applied(sa, nil), false, Update},
		{"the same ServiceAccount: kept", sa, applied(sa, nil), true, Keep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Action("web", tc.desired, tc.live, tc.rerunFailed)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hookAction = %d, want %d", got, tc.want)
			}
		})
	}
	other := applied(job, complete)
	other.SetLabels(map[string]string{object.LabelApp: "other"})
	if got, _ := Action("web", job, other, false); got != Replace {
		t.Errorf("hookAction on a Job of app other = %d, want replace", got)
	}
}
