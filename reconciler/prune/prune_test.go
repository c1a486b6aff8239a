package prune

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/wave"
)

func TestPlanPrune(t *testing.T) {
	app := &config.App{Name: "web", Namespace: "web", AllowNamespaces: []string{"web", "web-jobs"}, AllowClusterScoped: []string{"rbac.authorization.k8s.io/ClusterRole"}}
	keep := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		return fixture.WithAnnotations(u, Annotation+"=false")
	}
	deleting := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		now := metav1.NewTime(time.Unix(0, 0))
		u.SetDeletionTimestamp(&now)
		return u
	}
	controlledBy := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetOwnerReferences(fixture.ControllerRef("Deployment", "api"))
		return u
	}
	notPinbots := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}})
		return u
	}
	otherApp := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetLabels(map[string]string{object.LabelApp: "other"})
		return u
	}
	deploy := fixture.Obj("apps/v1", "Deployment", "web", "api", nil)
	for _, tc := range []struct {
		name       string
		allowEmpty bool
		desired    []*unstructured.Unstructured
		inventory  []*unstructured.Unstructured
		want       Orphans
		wantErr    string
	}{
		{name: "nothing orphaned", desired: []*unstructured.Unstructured{fixture.ConfigMap("a"), deploy}, inventory: []*unstructured.Unstructured{fixture.Owned(fixture.ConfigMap("a")), fixture.Owned(deploy.DeepCopy())}},
		{name: "removed from Git is deleted, declared is not",
			desired:   []*unstructured.Unstructured{fixture.ConfigMap("a")},
			inventory: []*unstructured.Unstructured{fixture.Owned(fixture.ConfigMap("a")), fixture.Owned(fixture.ConfigMap("b")), fixture.Owned(deploy.DeepCopy())},
			want:      Orphans{Delete: []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "b"}, {Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}}}},
		{name: "highest wave first",
			desired: []*unstructured.Unstructured{fixture.ConfigMap("a")},
			inventory: []*unstructured.Unstructured{fixture.Owned(fixture.ConfigMap("migrate-cfg", wave.AnnotationSyncWave+"=-1")), fixture.Owned(fixture.ConfigMap("z-late", wave.AnnotationArgoSyncWave+"=5")),
				fixture.Owned(fixture.ConfigMap("m", wave.AnnotationSyncWave+"=bad"))},
			want: Orphans{Delete: []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "z-late"}, {Kind: "ConfigMap", Namespace: "web", Name: "m"}, {Kind: "ConfigMap", Namespace: "web", Name: "migrate-cfg"}}}},
		{name: "opt-out annotation, deleting, outside allowNamespaces, Namespace, CRD and cluster kinds not allowed are kept",
			desired: []*unstructured.Unstructured{fixture.ConfigMap("a")},
			inventory: []*unstructured.Unstructured{
				fixture.Owned(keep(fixture.ConfigMap("precious"))),
				fixture.Owned(deleting(fixture.ConfigMap("going"))),
				fixture.Owned(fixture.Obj("v1", "ConfigMap", "kube-system", "elsewhere", nil)),
				fixture.Owned(fixture.Obj("v1", "Namespace", "", "web-jobs", nil)),
				fixture.Owned(fixture.Obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil)),
				fixture.Owned(fixture.Obj("storage.k8s.io/v1", "StorageClass", "", "fast", nil)),
				fixture.Owned(fixture.Obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "web-reader", nil)),
				fixture.Owned(fixture.Obj("v1", "ConfigMap", "web-jobs", "jobs-cfg", nil)),
			},
			want: Orphans{
				Delete: []object.Ref{{Kind: "ConfigMap", Namespace: "web-jobs", Name: "jobs-cfg"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "web-reader"}},
				Keep: []Kept{
					{object.Ref{Kind: "ConfigMap", Namespace: "kube-system", Name: "elsewhere"}, `namespace "kube-system" is not in allowNamespaces [web web-jobs]`},
					{object.Ref{Kind: "ConfigMap", Namespace: "web", Name: "going"}, keepDeleting},
					{object.Ref{Kind: "ConfigMap", Namespace: "web", Name: "precious"}, `annotation pinbot.dev/prune: "false"`},
					{object.Ref{Kind: "Namespace", Name: "web-jobs"}, keepNamespace},
					{object.Ref{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, keepCRD},
					{object.Ref{Group: "storage.k8s.io", Kind: "StorageClass", Name: "fast"}, keepCluster},
				},
			}},
		{name: "not pinbot's: label copies, controlled objects, other apps",
			desired: []*unstructured.Unstructured{fixture.ConfigMap("a")},
			inventory: []*unstructured.Unstructured{
				notPinbots(fixture.Owned(fixture.Obj("v1", "Endpoints", "web", "api", nil))),
				controlledBy(fixture.Owned(fixture.Obj("apps/v1", "ReplicaSet", "web", "api-1", nil))),
				otherApp(fixture.Owned(fixture.ConfigMap("theirs"))),
			}},
		{name: "prune: true with an empty render is refused", desired: nil, inventory: []*unstructured.Unstructured{fixture.Owned(fixture.ConfigMap("a")), fixture.Owned(keep(fixture.ConfigMap("b")))},
			wantErr: "refusing to delete 1 object of the app: the render holds no objects"},
		{name: "an empty render with only kept orphans deletes nothing", desired: nil, inventory: []*unstructured.Unstructured{fixture.Owned(keep(fixture.ConfigMap("b")))},
			want: Orphans{Keep: []Kept{{object.Ref{Kind: "ConfigMap", Namespace: "web", Name: "b"}, keepAnnotated}}}},
		{name: "allowEmpty lets an empty render prune everything", allowEmpty: true, desired: nil, inventory: []*unstructured.Unstructured{fixture.Owned(fixture.ConfigMap("a"))},
			want: Orphans{Delete: []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "a"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := *app
			a.SyncPolicy.AllowEmpty = tc.allowEmpty
			got, err := Plan(&a, tc.desired, tc.inventory)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, guard.ErrEmpty) {
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
	p := Orphans{
		Delete: []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "z"}},
		Keep:   []Kept{{Object: object.Ref{Kind: "ConfigMap", Namespace: "web", Name: "a"}, Reason: keepAnnotated}},
	}
	want := []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "a"}, {Kind: "ConfigMap", Namespace: "web", Name: "z"}}
	if diff := cmp.Diff(want, p.All()); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
}

func TestArgoAnnotationsInPrune(t *testing.T) {
	app := &config.App{Name: "web", Namespace: "web", AllowNamespaces: []string{"web"}}
	inv := []*unstructured.Unstructured{
		fixture.Owned(fixture.ConfigMap("argo-keep", hook.AnnotationArgoSyncOptions+"=ServerSideApply=true, Prune=false")),
		fixture.Owned(fixture.ConfigMap("argo-other", hook.AnnotationArgoSyncOptions+"=Prune=true")),
		fixture.Owned(fixture.ConfigMap("extraneous", hook.AnnotationArgoCompareOptions+"=IgnoreExtraneous")),
	}
	got, err := Plan(app, []*unstructured.Unstructured{fixture.ConfigMap("a")}, inv)
	if err != nil {
		t.Fatal(err)
	}
	want := Orphans{
		Delete: []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "argo-other"}, {Kind: "ConfigMap", Namespace: "web", Name: "extraneous"}},
		Keep:   []Kept{{object.Ref{Kind: "ConfigMap", Namespace: "web", Name: "argo-keep"}, "annotation argocd.argoproj.io/sync-options: Prune=false"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		ann  string
		want bool
	}{
		{hook.AnnotationArgoCompareOptions + "=IgnoreExtraneous", true},
		{hook.AnnotationArgoCompareOptions + "=ServerSideDiff=true,IgnoreExtraneous", true},
		{hook.AnnotationArgoCompareOptions + "=IgnoreExtraneousX", false},
		{hook.AnnotationArgoSyncOptions + "=IgnoreExtraneous", false},
	} {
		if got := hook.IgnoreExtraneous(fixture.ConfigMap("x", tc.ann)); got != tc.want {
			t.Errorf("ignoreExtraneous(%s) = %t, want %t", tc.ann, got, tc.want)
		}
	}
}
