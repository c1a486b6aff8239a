package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"pinbot.dev/pinbot/reconciler/spoke"
)

// The passes that need Argo CD's cluster Secrets at once, when the last
// listing is old, share one LIST; within secretsTTL none lists again.
func TestRemotesListArgoCDSecretsOnceForABurst(t *testing.T) {
	kube := fake.NewClientset()
	var lists atomic.Int32
	kube.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		time.Sleep(50 * time.Millisecond) // a busy API server: the burst arrives meanwhile
		return false, nil, nil
	})
	rs := NewRemotes(kube, spoke.DefaultTrust(), time.Second, "", Handlers{Changed: func(string, []string) {}})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := rs.list(context.Background(), "argocd"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := rs.list(context.Background(), "argocd"); err != nil {
		t.Fatal(err)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("21 asks for the cluster Secrets made %d LISTs, want 1", n)
	}
}
