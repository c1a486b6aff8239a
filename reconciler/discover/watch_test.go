package discover

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

func application(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Application")
	u.SetNamespace("argocd")
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func fakeArgo(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{deployer.ApplicationsResource: "ApplicationList"}, objs...)
}

var teamShop = []config.Discovery{{ArgoCD: &config.ArgoCDSelector{Selector: "team=shop"}}}

// serve's start reads the selected apps from the Watcher's caches, and
// Changed fires only for a change after the apps were reported.
func TestWatcherAnswersFromItsCachesAndReportsChangesAfterApps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dyn := fakeArgo(application("cart", map[string]string{"team": "shop"}), application("ledger", map[string]string{"team": "books"}))
	w := Watch(ctx, dyn, teamShop)
	if err := w.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Changed():
		t.Fatal("Changed fired before any set was reported")
	case <-time.After(200 * time.Millisecond):
	}
	if got := names(w.Apps()); strings.Join(got, ",") != "cart" {
		t.Fatalf("apps = %v, want [cart]", got)
	}
	if _, err := dyn.Resource(deployer.ApplicationsResource).Namespace("argocd").
		Create(ctx, application("pay", map[string]string{"team": "shop"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("a new selected Application did not fire Changed")
	}
	if got := names(w.Apps()); strings.Join(got, ",") != "cart,pay" {
		t.Errorf("apps = %v, want [cart pay]", got)
	}
}

// A discovery pinbot may not read fails serve's start with the reason
// and the remedy, instead of waiting for a list that never succeeds.
func TestSyncedSaysWhyAListFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn := fakeArgo()
	dyn.PrependReactor("list", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(deployer.ApplicationsResource.GroupResource(), "", nil)
	})
	err := Watch(ctx, dyn, teamShop).Synced(ctx)
	if err == nil || !strings.Contains(err.Error(), "discover[0]: listing applications in argocd") ||
		!strings.Contains(err.Error(), "deployers component") || !apierrors.IsForbidden(err) {
		t.Fatalf("Synced = %v, want discover[0]'s forbidden list with the remedy", err)
	}
}
