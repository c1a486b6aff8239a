package deployer

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/object"
)

func TestParseInventoryID(t *testing.T) {
	tests := []struct {
		id   string
		want object.Ref
		err  bool
	}{
		{id: "web_api_apps_Deployment", want: object.Ref{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}},
		{id: "web_api__Service", want: object.Ref{Kind: "Service", Namespace: "web", Name: "api"}},
		{id: "_web__Namespace", want: object.Ref{Kind: "Namespace", Name: "web"}},
		{id: "_system__controller__view_rbac.authorization.k8s.io_ClusterRole", want: object.Ref{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:controller:view"}},
		{id: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", want: object.Ref{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}},
		{id: "web_api_apps", err: true},
		{id: "web", err: true},
		{id: "web_a_b_apps_Deployment", err: true},
		{id: "web__apps_Deployment", err: true},
		{id: "web_api_apps_", err: true},
	}
	for _, tc := range tests {
		got, err := ParseInventoryID(tc.id)
		if tc.err {
			if err == nil {
				t.Errorf("ParseInventoryID(%q) = %+v, want an error", tc.id, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseInventoryID(%q): %s", tc.id, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseInventoryID(%q) (-want +got):\n%s", tc.id, diff)
		}
	}
}

func TestApplicationWorkloads(t *testing.T) {
	a := mustApp(t, appHeader+`status:
  resources:
  - {version: v1, kind: Service, namespace: web, name: api}
  - {group: apps, version: v1, kind: StatefulSet, namespace: web, name: db}
  - {group: apps, version: v1, kind: Deployment, namespace: web, name: api}
  - {group: batch, version: v1, kind: Job, namespace: web, name: migrate, hook: true}
  - {group: apps, version: v1, kind: Deployment, namespace: web, name: old, requiresPruning: true}
  - {group: batch, version: v1, kind: Job, namespace: web, name: seed}
  - {version: v1, kind: Pod, namespace: web, name: debug}
`)
	wantAll := []object.Ref{
		{Kind: "Pod", Namespace: "web", Name: "debug"},
		{Kind: "Service", Namespace: "web", Name: "api"},
		{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"},
		{Group: "apps", Kind: "StatefulSet", Namespace: "web", Name: "db"},
		{Group: "batch", Kind: "Job", Namespace: "web", Name: "seed"},
	}
	if diff := cmp.Diff(wantAll, a.Resources()); diff != "" {
		t.Errorf("Resources (-want +got):\n%s", diff)
	}
	want := []object.Ref{
		{Kind: "Pod", Namespace: "web", Name: "debug"},
		{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"},
		{Group: "apps", Kind: "StatefulSet", Namespace: "web", Name: "db"},
		{Group: "batch", Kind: "Job", Namespace: "web", Name: "seed"},
	}
	if diff := cmp.Diff(want, a.Workloads()); diff != "" {
		t.Errorf("Workloads (-want +got):\n%s", diff)
	}
}

func TestKustomizationWorkloads(t *testing.T) {
	k := mustKustomization(t, ksHeader+`status:
  inventory:
    entries:
    - {id: _web__Namespace, v: v1}
    - {id: web_podinfo_apps_Deployment, v: v1}
    - {id: web_podinfo__Service, v: v1}
    - {id: web_agent_apps_DaemonSet, v: v1}
`)
	want := []object.Ref{
		{Group: "apps", Kind: "DaemonSet", Namespace: "web", Name: "agent"},
		{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "podinfo"},
	}
	got, err := k.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Workloads (-want +got):\n%s", diff)
	}

	none, err := mustKustomization(t, ksHeader).Resources()
	if err != nil || len(none) != 0 {
		t.Errorf("Resources without an inventory = %v, %v; want none", none, err)
	}

	bad := mustKustomization(t, ksHeader+"status: {inventory: {entries: [{id: web_podinfo_apps_Deployment, v: v1}, {id: broken, v: v1}]}}")
	_, err = bad.Workloads()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "status.inventory.entries[1].id" {
		t.Errorf("Workloads of a broken entry = %v, want a *FieldError naming status.inventory.entries[1].id", err)
	}
}

func TestRefString(t *testing.T) {
	for _, tc := range []struct {
		ref  object.Ref
		want string
	}{
		{object.Ref{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}, "Deployment web/api"},
		{object.Ref{Group: "example.com", Kind: "Widget", Namespace: "web", Name: "w"}, "Widget.example.com web/w"},
		{object.Ref{Kind: "Namespace", Name: "web"}, "Namespace web"},
	} {
		if got := tc.ref.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
