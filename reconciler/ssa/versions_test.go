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

// The proofs of forty apps confirmed at once read their Deployments'
// versions by a LIST or two of the namespace, not a GET each, and each
// gets its own Deployment's UID and resourceVersion; one deleted since
// is missing.
func TestVersionsListOncePerBurst(t *testing.T) {
	deployment := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
	}
	var objs []runtime.Object
	for i := range 40 {
		objs = append(objs, deployment(fmt.Sprintf("app-%02d", i), fmt.Sprint(100+i)))
	}
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, &metav1.PartialObjectMetadata{})
	md := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	md.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		time.Sleep(20 * time.Millisecond) // as a real API server takes a while
		return false, nil, nil
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}},
	}}}
	a := New(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), md, disc)
	wanted := func(name string) map[object.Ref]*unstructured.Unstructured {
		d := deploymentRef(name)
		return map[object.Ref]*unstructured.Unstructured{object.RefOf(d): d}
	}
	var wg sync.WaitGroup
	got := make([]map[object.Ref]*unstructured.Unstructured, 40)
	errs := make([]error, 40)
	for i := range 40 {
		wg.Go(func() {
			got[i] = map[object.Ref]*unstructured.Unstructured{}
			errs[i] = a.Versions(context.Background(), wanted(fmt.Sprintf("app-%02d", i)), got[i])
		})
	}
	wg.Wait()
	for i := range 40 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		name := fmt.Sprintf("app-%02d", i)
		d := got[i][object.RefOf(deploymentRef(name))]
		if d == nil || d.GetUID() != types.UID("uid-"+name) || d.GetResourceVersion() != fmt.Sprint(100+i) || d.GetKind() != "Deployment" {
			t.Errorf("%s read as %v; want its UID and resourceVersion %d", name, d, 100+i)
		}
	}
	lists := 0
	for _, act := range md.Actions() {
		if act.GetVerb() == "list" {
			lists++
		}
		if act.GetVerb() == "get" {
			t.Errorf("a GET (%v); want the versions listed", act)
		}
	}
	if lists > 3 {
		t.Errorf("%d LISTs for 40 confirmations at once; want a listing or two (each answers those that asked before it began)", lists)
	}
	t.Logf("%d LISTs for 40 confirmations", lists)

	gone := map[object.Ref]*unstructured.Unstructured{}
	if err := a.Versions(context.Background(), wanted("deleted-since"), gone); err != nil || len(gone) != 0 {
		t.Errorf("a Deployment that does not exist: %v, %v; want it missing", gone, err)
	}
}

// deploymentRef is the Deployment web/name as a proof's snapshot
// desires it.
func deploymentRef(name string) *unstructured.Unstructured {
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	d.SetNamespace("web")
	d.SetName(name)
	return d
}
