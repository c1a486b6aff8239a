package ssa

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"pinbot.dev/pinbot/reconciler/object"
)

func labelled(kind, ns, name, app string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
			Labels: map[string]string{object.LabelApp: app}, Annotations: map[string]string{object.AnnotationHash: "h"}},
	}
}

// Forty apps' first passes at once share the listing of their
// namespace: a LIST or two per kind, not one per kind and app, and each
// app gets its own objects.
func TestInventorySharedListsOncePerBurst(t *testing.T) {
	var objs []runtime.Object
	for i := range 40 {
		app := fmt.Sprintf("app-%02d", i)
		objs = append(objs, labelled("ConfigMap", "web", app+"-settings", app), labelled("Service", "web", app, app))
	}
	objs = append(objs, labelled("ConfigMap", "other", "elsewhere", "app-00"))
	scheme := metadatafake.NewTestScheme()
	for _, kind := range []string{"ConfigMap", "Service", "Namespace"} {
		scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: kind}, &metav1.PartialObjectMetadata{})
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	// A LIST takes a while, as on a real API server: the apps asking
	// meanwhile wait for the next listing.
	md.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		time.Sleep(20 * time.Millisecond)
		return false, nil, nil
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	verbs := metav1.Verbs{"get", "list", "watch"}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
		{Name: "services", Kind: "Service", Namespaced: true, Verbs: verbs},
		{Name: "namespaces", Kind: "Namespace", Verbs: verbs},
	}}}
	a := New(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), md, disc)
	var wg sync.WaitGroup
	got := make([][]*unstructured.Unstructured, 40)
	errs := make([]error, 40)
	owned := time.Now() // the apps' loops began, as a takeover's do
	for i := range 40 {
		wg.Go(func() {
			got[i], errs[i] = a.InventoryShared(context.Background(), fmt.Sprintf("app-%02d", i), []string{"web"}, owned)
		})
	}
	wg.Wait()
	for i := range 40 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(got[i]) != 2 {
			t.Errorf("app-%02d: %d objects, want its ConfigMap and Service in web", i, len(got[i]))
		}
		for _, o := range got[i] {
			if k := o.GetKind(); o.GetAPIVersion() != "v1" || (k != "ConfigMap" && k != "Service") {
				t.Errorf("app-%02d got %s/%s as %s %s, want its kind", i, o.GetNamespace(), o.GetName(), o.GetAPIVersion(), k)
			}
			if o.GetLabels()[object.LabelApp] != fmt.Sprintf("app-%02d", i) || o.GetNamespace() != "web" {
				t.Errorf("app-%02d got %s/%s of %s", i, o.GetNamespace(), o.GetName(), o.GetLabels()[object.LabelApp])
			}
		}
	}
	lists := 0
	for _, act := range md.Actions() {
		if act.GetVerb() == "list" {
			lists++
		}
	}
	// Three kinds in two scopes (web, and the cluster-scoped Namespaces):
	// one listing answers every app that began passing before it.
	if lists != 3 {
		t.Errorf("%d LISTs for 40 apps' inventories, want 3 (one listing of three kinds)", lists)
	}
	t.Logf("%d LISTs for 40 apps", lists)

	// An app that began passing after the listing began is answered by
	// a later one: nothing written before it began is missed. One that
	// began before is answered by the listing kept.
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := md.Resource(cm).Namespace("web").(metadatafake.MetadataClient).CreateFake(labelled("ConfigMap", "web", "app-00-new", "app-00"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept, err := a.InventoryShared(context.Background(), "app-00", []string{"web"}, owned)
	if err != nil || len(kept) != 2 {
		t.Errorf("app-00, passing since before the listing: %d objects (%v), want the listing's 2", len(kept), err)
	}
	again, err := a.InventoryShared(context.Background(), "app-00", []string{"web"}, time.Now())
	if err != nil || len(again) != 3 {
		t.Errorf("app-00, passing since after a ConfigMap was added: %d objects (%v), want 3", len(again), err)
	}
}
