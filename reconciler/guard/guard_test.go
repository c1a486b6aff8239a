package guard

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/object"
)

// staticScope knows the scopes of a few built-in kinds.
func staticScope(gvk schema.GroupVersionKind) (bool, error) {
	switch gvk.Kind {
	case "Namespace", "ClusterRole", "CustomResourceDefinition":
		return false, nil
	case "ConfigMap", "Deployment", "Service":
		return true, nil
	}
	return false, errors.New("no matches for kind " + gvk.Kind)
}

func crd(group, kind, scope string) *unstructured.Unstructured {
	return fixture.Obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets."+group, map[string]any{
		"spec": map[string]any{"group": group, "scope": scope, "names": map[string]any{"kind": kind}},
	})
}

func TestPlace(t *testing.T) {
	app := &config.App{Name: "web", Namespace: "web", AllowNamespaces: []string{"web", "web-jobs"}}
	for _, tc := range []struct {
		name    string
		app     *config.App
		objs    []*unstructured.Unstructured
		want    []string // placed objects
		wantErr []string // substrings, one per violation
	}{
		{name: "defaults the namespace", objs: []*unstructured.Unstructured{
			fixture.Obj("v1", "ConfigMap", "", "a", nil), fixture.Obj("apps/v1", "Deployment", "web-jobs", "b", nil)},
			want: []string{"ConfigMap web/a", "Deployment web-jobs/b"}},
		{name: "namespace outside the allow-list", objs: []*unstructured.Unstructured{
			fixture.Obj("v1", "ConfigMap", "", "a", nil), fixture.Obj("v1", "ConfigMap", "kube-system", "evil", nil)},
			wantErr: []string{`ConfigMap kube-system/evil refused: namespace "kube-system" is not in allowNamespaces [web web-jobs]`}},
		{name: "every violation is named", objs: []*unstructured.Unstructured{
			fixture.Obj("v1", "ConfigMap", "a", "x", nil), fixture.Obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "admin", nil)},
			wantErr: []string{`ConfigMap a/x refused`, `ClusterRole.rbac.authorization.k8s.io admin refused: cluster-scoped kind not in allowClusterScoped`}},
		{name: "allowed Namespace object, namespace field cleared", objs: []*unstructured.Unstructured{
			fixture.Obj("v1", "Namespace", "web", "web-jobs", nil)},
			want: []string{"Namespace web-jobs"}},
		{name: "other Namespace refused", objs: []*unstructured.Unstructured{fixture.Obj("v1", "Namespace", "", "prod", nil)},
			wantErr: []string{"Namespace prod refused"}},
		{name: "cluster-scoped kind allowed by group/Kind",
			app:  &config.App{Name: "web", Namespace: "web", AllowClusterScoped: []string{"rbac.authorization.k8s.io/ClusterRole"}},
			objs: []*unstructured.Unstructured{fixture.Obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "view", nil)},
			want: []string{"ClusterRole.rbac.authorization.k8s.io view"}},
		{name: "CRD and its objects in one render",
			app: &config.App{Name: "web", Namespace: "web", AllowClusterScoped: []string{"apiextensions.k8s.io/CustomResourceDefinition"}},
			objs: []*unstructured.Unstructured{crd("example.com", "Widget", "Namespaced"), fixture.Obj("example.com/v1", "Widget", "", "w", nil),
				crd("example.org", "Gadget", "Cluster"), fixture.Obj("example.org/v1", "Gadget", "", "g", nil)},
			wantErr: []string{"Gadget.example.org g refused"}},
		{name: "duplicate", objs: []*unstructured.Unstructured{fixture.Obj("v1", "ConfigMap", "", "a", nil), fixture.Obj("v1", "ConfigMap", "web", "a", nil)},
			wantErr: []string{"ConfigMap web/a refused: declared twice"}},
		{name: "unknown kind", objs: []*unstructured.Unstructured{fixture.Obj("example.com/v1", "Thing", "", "t", nil)},
			wantErr: []string{"looking up the scope of Thing.example.com t: no matches for kind Thing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := app
			if tc.app != nil {
				a = tc.app
			}
			got, err := Place(a, tc.objs, staticScope)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Place succeeded with %q, want errors %q", fixture.Names(got), tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Place: %s", err)
			}
			if diff := cmp.Diff(tc.want, fixture.Names(got)); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
			if tc.objs[0].GetNamespace() != "" && tc.objs[0].GetKind() == "ConfigMap" {
				t.Errorf("Place changed its input")
			}
		})
	}
}

func TestPlaceGuardErrorNamesObject(t *testing.T) {
	_, err := Place(&config.App{Name: "web", Namespace: "web"}, []*unstructured.Unstructured{fixture.Obj("v1", "ConfigMap", "kube-system", "x", nil)}, staticScope)
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v is not a *Error", err)
	}
	if want := (object.Ref{Kind: "ConfigMap", Namespace: "kube-system", Name: "x"}); ge.Object != want {
		t.Errorf("Error.Object = %+v, want %+v", ge.Object, want)
	}
}
