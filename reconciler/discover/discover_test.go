package discover

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/reconciler/config"
)

// The discovery cache keeps of an Application only what selection reads,
// and objects that keep the same labels share them.
func TestKeeperKeepsWhatSelectionReads(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
  uid: "1234"
  resourceVersion: "42"
  labels: {team: shop, app: shop-web}
  annotations:
    pinbot.dev/verify: "true"
    kubectl.kubernetes.io/last-applied-configuration: '{"big": "copy"}'
  managedFields: [{manager: argocd}]
spec:
  project: prod
  destination: {name: eu-1, namespace: shop}
  source: {repoURL: https://git.example/shop.git, path: app}
  sources:
    - {repoURL: https://git.example/shop.git, path: other}
    - {repoURL: https://git.example/values.git, ref: values}
status:
  resources: [{kind: Deployment, name: web}]
  history: [{revision: abc}]
`), &u.Object); err != nil {
		t.Fatal(err)
	}
	want := selected(u)
	if !reflect.DeepEqual(want.Repos, []string{"https://git.example/shop.git", "https://git.example/values.git"}) {
		t.Errorf("the Application deploys from %q; want its sources' repositories, each once", want.Repos)
	}
	if want.Destination != "eu-1/shop" {
		t.Errorf("the Application deploys to %q; want eu-1/shop", want.Destination)
	}
	d := config.Discovery{ArgoCD: &config.ArgoCDSelector{Selector: "team in (shop, pay)", Annotated: true}}
	k := newKeeper(d)
	k.serving.Store(&serving{reads: func(string, string) bool { return false }, changed: func(string, string) {}})
	got, err := k.keep(u.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if got.(*selectedObject).raw.Load() == nil {
		t.Errorf("a keeper not trimmed yet kept no JSON of an object its reader does not read; want every object's until the trim")
	}
	k.trimmed.Store(true)
	if got, err = k.keep(u.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	kept := got.(*selectedObject)
	if kept.raw.Load() != nil {
		t.Errorf("a trimmed keeper kept the JSON of an object its reader does not read: %s", *kept.raw.Load())
	}
	want.Labels = map[string]string{"team": "shop"}
	want.Annotations = map[string]string{"pinbot.dev/verify": "true"}
	if !reflect.DeepEqual(kept.sel, want) {
		t.Errorf("selected after the trim: %+v; want %+v", kept.sel, want)
	}
	if !d.Matches(kept.sel) || d.Matches(config.Selected{Namespace: "argocd", Labels: kept.sel.Labels}) {
		t.Errorf("the trimmed object matches %t, without its annotation %t; want the discovery's verdict on the whole object", d.Matches(kept.sel), !d.Matches(config.Selected{Namespace: "argocd", Labels: kept.sel.Labels}))
	}
	other := u.DeepCopy()
	other.SetName("shop-2")
	other.SetLabels(map[string]string{"team": "shop", "app": "shop-2"})
	got2, err := k.keep(other)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := kept.sel.Labels, got2.(*selectedObject).sel.Labels; reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Errorf("two objects keeping team=shop hold a map each (%v, %v); want one shared", a, b)
	}
	if kept.GetResourceVersion() != "42" || kept.GetUID() != "1234" || kept.GetName() != "shop" || kept.GetNamespace() != "argocd" {
		t.Errorf("resourceVersion %q, uid %q; want them kept", kept.GetResourceVersion(), kept.GetUID())
	}
}

// An object's destination is its cluster and namespace: what the
// replicas' shards group apps by.
func TestDestinationOf(t *testing.T) {
	for _, tc := range []struct{ object, want string }{
		{`{kind: Application, spec: {destination: {server: "https://kubernetes.default.svc", namespace: shop}}}`, "/shop"},
		{`{kind: Application, spec: {destination: {name: in-cluster, namespace: shop}}}`, "/shop"},
		{`{kind: Application, spec: {destination: {name: eu-1, namespace: shop}}}`, "eu-1/shop"},
		{`{kind: Application, spec: {destination: {server: "https://eu-1.example:6443", namespace: shop}}}`, "https://eu-1.example:6443/shop"},
		{`{kind: Application, spec: {destination: {name: eu-1}}}`, ""},
		{`{kind: Kustomization, spec: {targetNamespace: shop}}`, "/shop"},
		{`{kind: HelmRelease, spec: {targetNamespace: shop, kubeConfig: {secretRef: {name: eu-1}}}}`, "eu-1/shop"},
		{`{kind: Kustomization, spec: {path: ./apps}}`, ""},
	} {
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal([]byte(tc.object), &u.Object); err != nil {
			t.Fatal(err)
		}
		kept, err := newKeeper(config.Discovery{ArgoCD: &config.ArgoCDSelector{}}).keep(u)
		if err != nil {
			t.Fatal(err)
		}
		if got := kept.(*selectedObject).sel.Destination; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.object, got, tc.want)
		}
	}
}
