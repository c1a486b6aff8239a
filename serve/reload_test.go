package serve

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// serve reads discover:'s apps from one watch: a rediscovery with the
// same entries lists nothing again, other entries get a watch of their
// own, and a config without discover: keeps none. On the real API
// server, with Argo CD's Application CRD, counting the reads of the whole
// collection it answers (LISTs, or watches that stream the initial state).
func TestRediscoveryReadsTheWatchNotAnotherList(t *testing.T) {
	cluster, _, ns := plane.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := cluster.InstallNamedCRDs(ctx, kube.ApplicationCRD); err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	rc := cluster.Config()
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			// A read of the whole collection: a LIST, or the watch that
			// streams its initial state (client-go's WatchList).
			q := req.URL.Query()
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/"+deployer.ApplicationsResource.Resource) &&
				(q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
				lists.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace(ns)
	app.SetName("cart")
	app.SetLabels(map[string]string{"team": "shop"})
	app.Object["spec"] = map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://gitea.example/platform/cart.git", "path": "deploy", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "cart"},
	}
	if _, err := dyn.Resource(deployer.ApplicationsResource).Namespace(ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lists.Store(0)
	l := newReloader(ctx, Source{})
	l.dyn = dyn

	shop := []config.Discovery{{ArgoCD: &config.ArgoCDSelector{Namespace: ns, Selector: "team=shop"}}}
	for round := 1; round <= 3; round++ {
		apps, err := l.discovered(ctx, shop)
		if err != nil {
			t.Fatal(err)
		}
		if len(apps) != 1 || apps[0].Name != "cart" {
			t.Fatalf("round %d: apps %v, want cart", round, apps)
		}
		if got := lists.Load(); got != 1 {
			t.Fatalf("round %d: %d LISTs, want the watch's one", round, got)
		}
	}
	first := l.watch

	books := []config.Discovery{{ArgoCD: &config.ArgoCDSelector{Namespace: ns, Selector: "team=books"}}}
	if apps, err := l.discovered(ctx, books); err != nil || len(apps) != 0 {
		t.Fatalf("other entries: apps %v, error %v; want none", apps, err)
	}
	if l.watch == first || lists.Load() != 2 {
		t.Errorf("other entries read the old watch (%d LISTs)", lists.Load())
	}

	l.unwatch()
	if l.watch != nil || l.stopWatch != nil {
		t.Error("a config without discover: keeps a watch")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
