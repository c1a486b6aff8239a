package reconciler

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// TestChangesWakeOnlyTheirApps: a Pod event wakes the apps of its
// namespace, found through the wake index (not a look at every app), and
// a deployer's object wakes the app it belongs to.
func TestChangesWakeOnlyTheirApps(t *testing.T) {
	cfg := &config.Config{Apps: []config.App{
		{Name: "web", AllowNamespaces: []string{"web"}},
		{Name: "api", AllowNamespaces: []string{"api"}},
		{Name: "shop", ArgoCD: &deployer.ArgoCDApp{Application: "shop", Namespace: "argocd"}},
	}}
	r := &Reconciler{}
	r.route = &router{set: &r.set, log: &r.log}
	r.set.Store(newAppSet(cfg, nil))
	states := r.states()
	woken := func() map[string]bool {
		out := map[string]bool{}
		for name, st := range states {
			select {
			case <-st.observe:
				out[name] = true
			default:
			}
		}
		return out
	}

	r.route.changed("web", nil)
	if got := woken(); !got["web"] || got["api"] || got["shop"] {
		t.Errorf("a Pod event in web woke %v, want web alone", got)
	}

	// A pass finds api's Deployment in another namespace.
	deploy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "api", "namespace": "shared"}}}
	p := &pass{r: r, app: &cfg.Apps[1], st: states["api"]}
	p.setWorkloads([]*unstructured.Unstructured{deploy})
	r.route.changed("shared", []string{"api-5d8f"})
	if got := woken(); !got["api"] || got["web"] {
		t.Errorf("a ReplicaSet of api's Deployment in shared woke %v, want api alone", got)
	}
	r.route.changed("shared", []string{"other-77c9"})
	if got := woken(); len(got) != 0 {
		t.Errorf("another owner's ReplicaSet in shared woke %v, want none", got)
	}

	r.route.objectChanged(deployer.ApplicationsResource, "argocd", "shop")
	if got := woken(); !got["shop"] || len(got) != 1 {
		t.Errorf("shop's Application changing woke %v, want shop alone", got)
	}
	r.route.objectChanged(deployer.ApplicationsResource, "argocd", "other")
	if got := woken(); len(got) != 0 {
		t.Errorf("another Application changing woke %v, want none", got)
	}

	// A new set (discovery) keeps what the passes found.
	next := *cfg
	next.Apps = append(append([]config.App(nil), cfg.Apps...), config.App{Name: "new", AllowNamespaces: []string{"web"}})
	r.SetApps(next.Apps)
	states = r.states()
	r.route.changed("shared", []string{"api-5d8f"})
	if got := woken(); !got["api"] {
		t.Errorf("after a new app set, api's ReplicaSet woke %v, want api", got)
	}
	r.route.changed("web", nil)
	if got := woken(); !got["web"] || !got["new"] {
		t.Errorf("after a new app set, a Pod event in web woke %v, want web and new", got)
	}
}

// TestCallbacksBeforeTheFirstAppSet: a watch shared with discovery runs
// before the Reconciler is made, so its callbacks may come before New
// stores the apps. They find none and wake none, instead of crashing
// serve (the fleet bench's run 21 did, as its replicas restarted).
func TestCallbacksBeforeTheFirstAppSet(t *testing.T) {
	r := &Reconciler{}
	r.route = &router{set: &r.set, log: &r.log, narrow: true}
	apps := deployer.ApplicationsResource
	h := r.route.handlers()
	r.route.objectChanged(apps, "argocd", "shop")
	r.route.objectChanged(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "web", "web")
	h.Changed("web", []string{"web-7d9f"})
	h.InventoryChanged("web")
	h.WorkloadStatusChanged("web")
	h.Reachability("spoke", true)
	if r.route.passedHere(apps, "argocd", "shop") {
		t.Error("with no apps yet, an Application is read here; want none read")
	}
}
