package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"pinbot.dev/pinbot/reconciler/verdict"
)

func watcherOf(t *testing.T, narrow bool, objs ...*corev1.Pod) *Watcher {
	t.Helper()
	kube := fake.NewClientset()
	for _, p := range objs {
		if _, err := kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := newWatcher(kube, newLiveness(func(context.Context) error { return nil }, time.Now), nil, narrow)
	t.Cleanup(w.close)
	return w
}

// A narrow watcher (a sharded replica's) caches the namespaces its apps
// read, though it may list the whole cluster, and drops each once no
// app passed here reads it.
func TestNarrowWatcherHoldsItsAppsNamespacesOnly(t *testing.T) {
	ctx := context.Background()
	w := watcherOf(t, true,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-1", Namespace: "pay"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "other"}})
	if err := w.Watch(ctx, "web", []string{"shop"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Watch(ctx, "api", []string{"shop", "pay"}); err != nil {
		t.Fatal(err)
	}
	if got := w.Namespaces(); !slices.Equal(got, []string{"pay", "shop"}) {
		t.Fatalf("caches of %q; want pay and shop alone", got)
	}
	pods := func() []string {
		var s verdict.Snapshot
		w.FillOwned(&s, []string{"shop", "pay", "other"}, Owned{Pods: []types.NamespacedName{{Namespace: "shop", Name: "web-1"}, {Namespace: "pay", Name: "api-1"}, {Namespace: "other", Name: "db-1"}}})
		var out []string
		for _, p := range s.Pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	if got := pods(); !slices.Equal(got, []string{"pay/api-1", "shop/web-1"}) {
		t.Errorf("Pods read: %q; want pay's and shop's, none of other's", got)
	}

	w.Forget("web")
	if got := w.Namespaces(); !slices.Equal(got, []string{"pay", "shop"}) {
		t.Errorf("after web went: caches of %q; api still reads shop and pay", got)
	}
	w.mu.Lock()
	shop := w.spaces["shop"]
	w.mu.Unlock()
	w.Forget("api")
	if got := w.Namespaces(); len(got) != 0 {
		t.Errorf("after every app went: caches of %q; want none", got)
	}
	select {
	case <-shop.stop:
	default:
		t.Error("shop's informers still run after its last reader went")
	}
	if got := pods(); len(got) != 0 {
		t.Errorf("Pods read after the caches went: %q", got)
	}
	// An app passed here again starts its namespace's cache again.
	if err := w.Watch(ctx, "web", []string{"shop"}); err != nil {
		t.Fatal(err)
	}
	if got := pods(); !slices.Equal(got, []string{"shop/web-1"}) {
		t.Errorf("Pods read after web came back: %q", got)
	}
}

// An unsharded watcher that may list the whole cluster keeps one cache
// of it, which no app's going drops.
func TestWideWatcherKeepsTheCluster(t *testing.T) {
	w := watcherOf(t, false, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"}})
	if err := w.Watch(context.Background(), "web", []string{"shop"}); err != nil {
		t.Fatal(err)
	}
	w.Forget("web")
	if got := w.Namespaces(); !slices.Equal(got, []string{""}) {
		t.Errorf("caches of %q; want the cluster's", got)
	}
}

// When the Pods of a namespace are no longer read here, the watches of
// the workloads and inventories there stop too.
func TestForgetDropsTheNamespacesWorkloads(t *testing.T) {
	ctx := context.Background()
	web := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"}}}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{deployments: "DeploymentList"}, web)
	c := New("", "", fake.NewClientset(), dyn, metadatafake.NewSimpleMetadataClient(scheme), Handlers{PerNamespace: true}, 0)
	t.Cleanup(c.Close)
	if err := c.Pods.Watch(ctx, "web", []string{"shop"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Objects.Get(ctx, deployments, "shop", "web", false); err != nil {
		t.Fatal(err)
	}
	watching := func() bool {
		c.Objects.mu.Lock()
		defer c.Objects.mu.Unlock()
		return c.Objects.infs[objectKey{gvr: deployments, ns: "shop"}] != nil
	}
	if !watching() {
		t.Fatal("no watch of shop's Deployments after a read")
	}
	c.Pods.Forget("web")
	if watching() {
		t.Error("shop's Deployments still watched after its last app went")
	}
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
