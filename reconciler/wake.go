package reconciler

// What wakes an app's loop: a person or a webhook (Trigger), and the
// clusters' callbacks, which never block.

import (
	"cmp"
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// Trigger asks the running loop for a full pass of app now (a webhook, a
// benchmark); it never blocks.
func (r *Reconciler) Trigger(name string) error {
	_, st, err := r.app(name)
	if err != nil {
		return err
	}
	st.fresh.Store(true)
	signal(st.trigger)
	return nil
}

// handlers tell the app loops of a cluster's changes (a spoke's; pinbot's
// own cluster also follows verify-only apps' objects).
func (r *Reconciler) handlers() cluster.Handlers {
	return cluster.Handlers{Changed: r.changed, InventoryChanged: r.inventoryChanged,
		Reachability: r.reachability, DownAfter: r.downAfter}
}

// reachability is the clusters' callback: the cluster named name stopped
// answering (down) or answers again. It wakes the apps whose last pass
// read it, which then say Unknown, naming the cluster and its error, or
// prove again; it never blocks.
func (r *Reconciler) reachability(name string, down bool) {
	log := r.log.Load()
	if log == nil {
		log = logctx.From(context.Background())
	}
	log.Info("cluster reachability changed", "cluster", cmp.Or(name, "(pinbot's own)"), "down", down)
	for _, st := range r.states() {
		if c := st.cluster.Load(); c != nil && *c == name {
			signal(st.observe)
		}
	}
}

// changed is the Pod watches' callback: a Pod or ReplicaSet in namespace,
// owned by owners, changed. It wakes the apps it may belong to (runsIn),
// whose loops re-verify from their caches, so that a proof follows the
// Pods it is about; it never blocks.
func (r *Reconciler) changed(namespace string, owners []string) {
	s := r.set.Load()
	for i := range s.cfg.Apps {
		a := &s.cfg.Apps[i]
		if st := s.states[a.Name]; st.runsIn(namespace, owners, a.AllowNamespaces) {
			signal(st.observe)
		}
	}
}

// objectChanged is the object caches' callback: an object ns/name of
// resource changed, a deployer's object (a Kustomization's status says it
// applied a revision, an Application's that it synced) or a workload (a
// Deployment's status says its rollout is done). It wakes the apps that
// read it, whose loops re-verify from their caches; it never blocks.
func (r *Reconciler) objectChanged(resource schema.GroupVersionResource, ns, name string) {
	if !deployer.IsDeployment(resource) {
		r.changed(ns, []string{name})
		return
	}
	s := r.set.Load()
	for i := range s.cfg.Apps {
		a := &s.cfg.Apps[i]
		if res, ans, aname, ok := deployerObject(a); ok && res == resource && ans == ns && aname == name {
			if st := s.states[a.Name]; st != nil {
				signal(st.observe)
			}
		}
	}
}

// deployerObject names the object whose status says what app's deployer
// did, for a verify-only app.
func deployerObject(app *config.App) (res schema.GroupVersionResource, ns, name string, ok bool) {
	switch {
	case app.ArgoCD != nil:
		ns, name = app.ArgoCD.Object()
		return deployer.ApplicationsResource, ns, name, true
	case app.Flux != nil && app.Flux.HelmRelease != "":
		ns, name = app.Flux.Object()
		return deployer.HelmReleasesResource, ns, name, true
	case app.Flux != nil:
		ns, name = app.Flux.Object()
		return deployer.KustomizationsResource, ns, name, true
	}
	return res, "", "", false
}

// inventoryChanged is the live cache's callback: an object of app's
// inventory changed its content (or appeared, or went away). It wakes a
// self-healing app's loop; it never blocks.
func (r *Reconciler) inventoryChanged(app string) {
	if st := r.states()[app]; st != nil {
		signal(st.wake)
	}
}
