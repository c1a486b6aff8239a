package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/render"
)

// owned makes u look as pinbot applied it for app "web": the inventory
// label and pinbot's server-side apply managed-fields entry.
func owned(u *unstructured.Unstructured) *unstructured.Unstructured {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelApp] = "web"
	u.SetLabels(labels)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	return u
}

func TestPlanPrune(t *testing.T) {
	app := &App{Name: "web", Namespace: "web", AllowNamespaces: []string{"web", "web-jobs"}, AllowClusterScoped: []string{"rbac.authorization.k8s.io/ClusterRole"}}
	keep := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		return withAnnotations(u, AnnotationPrune+"=false")
	}
	deleting := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		now := metav1.NewTime(time.Unix(0, 0))
		u.SetDeletionTimestamp(&now)
		return u
	}
	controlledBy := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetOwnerReferences(controllerRef("Deployment", "api"))
		return u
	}
	notPinbots := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}})
		return u
	}
	otherApp := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetLabels(map[string]string{LabelApp: "other"})
		return u
	}
	deploy := obj("apps/v1", "Deployment", "web", "api", nil)
	for _, tc := range []struct {
		name       string
		allowEmpty bool
		desired    []*unstructured.Unstructured
		inventory  []*unstructured.Unstructured
		want       PrunePlan
		wantErr    string
	}{
		{name: "nothing orphaned", desired: []*unstructured.Unstructured{cm("a"), deploy}, inventory: []*unstructured.Unstructured{owned(cm("a")), owned(deploy.DeepCopy())}},
		{name: "removed from Git is deleted, declared is not",
			desired:   []*unstructured.Unstructured{cm("a")},
			inventory: []*unstructured.Unstructured{owned(cm("a")), owned(cm("b")), owned(deploy.DeepCopy())},
			want:      PrunePlan{Delete: []ObjectRef{{Kind: "ConfigMap", Namespace: "web", Name: "b"}, {Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}}}},
		{name: "highest wave first",
			desired: []*unstructured.Unstructured{cm("a")},
			inventory: []*unstructured.Unstructured{owned(cm("migrate-cfg", AnnotationSyncWave+"=-1")), owned(cm("z-late", AnnotationArgoSyncWave+"=5")),
				owned(cm("m", AnnotationSyncWave+"=bad"))},
			want: PrunePlan{Delete: []ObjectRef{{Kind: "ConfigMap", Namespace: "web", Name: "z-late"}, {Kind: "ConfigMap", Namespace: "web", Name: "m"}, {Kind: "ConfigMap", Namespace: "web", Name: "migrate-cfg"}}}},
		{name: "opt-out annotation, deleting, outside allowNamespaces, Namespace, CRD and cluster kinds not allowed are kept",
			desired: []*unstructured.Unstructured{cm("a")},
			inventory: []*unstructured.Unstructured{
				owned(keep(cm("precious"))),
				owned(deleting(cm("going"))),
				owned(obj("v1", "ConfigMap", "kube-system", "elsewhere", nil)),
				owned(obj("v1", "Namespace", "", "web-jobs", nil)),
				owned(obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil)),
				owned(obj("storage.k8s.io/v1", "StorageClass", "", "fast", nil)),
				owned(obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "web-reader", nil)),
				owned(obj("v1", "ConfigMap", "web-jobs", "jobs-cfg", nil)),
			},
			want: PrunePlan{
				Delete: []ObjectRef{{Kind: "ConfigMap", Namespace: "web-jobs", Name: "jobs-cfg"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "web-reader"}},
				Keep: []KeptObject{
					{ObjectRef{Kind: "ConfigMap", Namespace: "kube-system", Name: "elsewhere"}, `namespace "kube-system" is not in allowNamespaces [web web-jobs]`},
					{ObjectRef{Kind: "ConfigMap", Namespace: "web", Name: "going"}, keepDeleting},
					{ObjectRef{Kind: "ConfigMap", Namespace: "web", Name: "precious"}, `annotation pinbot.dev/prune: "false"`},
					{ObjectRef{Kind: "Namespace", Name: "web-jobs"}, keepNamespace},
					{ObjectRef{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, keepCRD},
					{ObjectRef{Group: "storage.k8s.io", Kind: "StorageClass", Name: "fast"}, keepCluster},
				},
			}},
		{name: "not pinbot's: label copies, controlled objects, other apps",
			desired: []*unstructured.Unstructured{cm("a")},
			inventory: []*unstructured.Unstructured{
				notPinbots(owned(obj("v1", "Endpoints", "web", "api", nil))),
				controlledBy(owned(obj("apps/v1", "ReplicaSet", "web", "api-1", nil))),
				otherApp(owned(cm("theirs"))),
			}},
		{name: "prune: true with an empty render is refused", desired: nil, inventory: []*unstructured.Unstructured{owned(cm("a")), owned(keep(cm("b")))},
			wantErr: "refusing to delete 1 object of the app: the render holds no objects"},
		{name: "an empty render with only kept orphans deletes nothing", desired: nil, inventory: []*unstructured.Unstructured{owned(keep(cm("b")))},
			want: PrunePlan{Keep: []KeptObject{{ObjectRef{Kind: "ConfigMap", Namespace: "web", Name: "b"}, keepAnnotated}}}},
		{name: "allowEmpty lets an empty render prune everything", allowEmpty: true, desired: nil, inventory: []*unstructured.Unstructured{owned(cm("a"))},
			want: PrunePlan{Delete: []ObjectRef{{Kind: "ConfigMap", Namespace: "web", Name: "a"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := *app
			a.SyncPolicy.AllowEmpty = tc.allowEmpty
			got, err := PlanPrune(&a, tc.desired, tc.inventory)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errEmpty) {
					t.Fatalf("error %v, want one wrapping errEmpty saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrunePlanOrphans(t *testing.T) {
	p := PrunePlan{
		Delete: []ObjectRef{{Kind: "ConfigMap", Namespace: "web", Name: "z"}},
		Keep:   []KeptObject{{Object: ObjectRef{Kind: "ConfigMap", Namespace: "web", Name: "a"}, Reason: keepAnnotated}},
	}
	want := []ObjectRef{{Kind: "ConfigMap", Namespace: "web", Name: "a"}, {Kind: "ConfigMap", Namespace: "web", Name: "z"}}
	if diff := cmp.Diff(want, p.Orphans()); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
}

func TestDegradeEmpty(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		wantHealth Health
		wantReason string
	}{
		{"an empty render", &render.Error{File: "app", Err: errEmpty}, Degraded, "render: app: " + errEmpty.Error()},
		{"a refused prune", fmt.Errorf("refusing to delete 2 objects of the app: %w", errEmpty), Degraded, "refusing to delete 2 objects of the app: " + errEmpty.Error()},
		{"another refusal", &render.Error{File: "app/x.yaml", Line: 3, Err: errors.New("bad")}, HealthUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &AppStatus{Health: HealthUnknown}
			degradeEmpty(s, tc.err)
			if s.Health != tc.wantHealth || s.HealthReason != tc.wantReason {
				t.Errorf("health %s (%q), want %s (%q)", s.Health, s.HealthReason, tc.wantHealth, tc.wantReason)
			}
		})
	}
}

func TestMayPrune(t *testing.T) {
	ctx := context.Background()
	forced := withSyncOptions(ctx, []SyncOption{SyncPrune()})
	for _, tc := range []struct {
		name   string
		policy bool
		ctx    context.Context
		mode   passMode
		down   bool
		commit string
		want   bool
	}{
		{"policy on, loop", true, ctx, modeLoop, false, "c1", true},
		{"policy on, manual sync", true, ctx, modeSync, false, "c1", true},
		{"policy off", false, ctx, modeSync, false, "c1", false},
		{"policy off, sync --prune", false, forced, modeSync, false, "c1", true},
		{"--prune applies to a manual sync only", false, forced, modeLoop, false, "c1", false},
		{"a follow-up pass reuses the last render", true, ctx, modeFollow, false, "c1", false},
		{"source unreachable", true, ctx, modeLoop, true, "c1", false},
		{"not the commit last fetched", true, ctx, modeLoop, false, "c0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &App{Name: "web", SyncPolicy: SyncPolicy{Prune: tc.policy}}
			st := &appState{commit: "c1"}
			if tc.down {
				st.sourceDown = time.Unix(1, 0)
			}
			if got := (&Reconciler{}).mayPrune(tc.ctx, app, st, tc.mode, tc.commit); got != tc.want {
				t.Errorf("mayPrune = %t, want %t", got, tc.want)
			}
		})
	}
}
