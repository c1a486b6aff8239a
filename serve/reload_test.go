package serve

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// serve reads discover:'s apps from one watch: a rediscovery with the
// same entries lists nothing again, other entries get a watch of their
// own, and a config without discover: keeps none.
func TestRediscoveryReadsTheWatchNotAnotherList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace("argocd")
	app.SetName("cart")
	app.SetLabels(map[string]string{"team": "shop"})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{deployer.ApplicationsResource: "ApplicationList"}, app)
	l := newReloader(ctx, Source{})
	l.dyn = dyn
	lists := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}

	shop := []config.Discovery{{ArgoCD: &config.ArgoCDSelector{Selector: "team=shop"}}}
	for round := 1; round <= 3; round++ {
		apps, err := l.discovered(ctx, shop)
		if err != nil {
			t.Fatal(err)
		}
		if len(apps) != 1 || apps[0].Name != "cart" {
			t.Fatalf("round %d: apps %v, want cart", round, apps)
		}
		if got := lists(); got != 1 {
			t.Fatalf("round %d: %d LISTs, want the watch's one", round, got)
		}
	}
	first := l.watch

	books := []config.Discovery{{ArgoCD: &config.ArgoCDSelector{Selector: "team=books"}}}
	if apps, err := l.discovered(ctx, books); err != nil || len(apps) != 0 {
		t.Fatalf("other entries: apps %v, error %v; want none", apps, err)
	}
	if l.watch == first || lists() != 2 {
		t.Errorf("other entries read the old watch (%d LISTs)", lists())
	}

	l.unwatch()
	if l.watch != nil || l.stopWatch != nil {
		t.Error("a config without discover: keeps a watch")
	}
}
