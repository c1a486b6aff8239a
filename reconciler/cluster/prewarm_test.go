package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func prewarmed(t *testing.T, kube *fake.Clientset) *Watcher {
	t.Helper()
	w := newWatcher(kube, newLiveness(func(context.Context) error { return nil }, time.Now), nil)
	t.Cleanup(w.close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w.Prewarm(ctx)
	return w
}

// A replica that may read the whole cluster has its Pods cached before
// any of its apps' passes asks.
func TestPrewarmCachesTheWholeClusterBeforeAnyPass(t *testing.T) {
	w := prewarmed(t, fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"}}))
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		c := w.spaces[""]
		w.mu.Unlock()
		if c != nil && c.pods.HasSynced() && c.replicaSets.HasSynced() && c.revisions.HasSynced() {
			if _, ok, _ := c.pods.GetStore().GetByKey("shop/web-1"); !ok {
				t.Fatal("the prewarmed cache misses shop/web-1")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no synced cluster-wide cache 10 s after Prewarm")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A replica confined to namespaces starts nothing: its apps name them.
func TestPrewarmLeavesANamespacedWatcherToTheApps(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", nil)
		}
		return false, nil, nil
	})
	w := prewarmed(t, kube)
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.scopeMu.Lock()
		scoped, wide := w.scoped, w.wide
		w.scopeMu.Unlock()
		if scoped {
			if wide {
				t.Fatal("a forbidden cluster-wide list scoped the watcher wide")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Prewarm never decided the scope")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.spaces) != 0 {
		t.Errorf("a namespaced watcher started caches %v", w.spaces)
	}
}
