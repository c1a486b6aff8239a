package reconciler

// What wakes an app's loop: a person or a webhook (Trigger), and the
// clusters' callbacks, which never block.

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		if c := st.cluster.Load(); c != nil && c.Name == name {
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
	for _, name := range s.wakes.in(namespace) {
		a := s.apps[name]
		if a == nil {
			continue // gone since
		}
		if st := s.states[name]; st.runsIn(namespace, owners, a.AllowNamespaces) {
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
	for _, st := range r.set.Load().byDeployer[deployerKey(resource, ns, name)] {
		signal(st.observe)
	}
}

func deployerKey(res schema.GroupVersionResource, ns, name string) string {
	return res.Resource + "." + res.Group + "/" + ns + "/" + name
}

// wakeIndex names, by namespace, the apps whose workloads a pass found
// there or that may deploy there (allowNamespaces): the apps a Pod event
// there may concern (runsIn decides). It only grows, by namespaces, while
// serve runs; a name no longer in the set is skipped.
type wakeIndex struct {
	mu sync.RWMutex
	ns map[string][]string
}

func newWakeIndex() *wakeIndex { return &wakeIndex{ns: map[string][]string{}} }

// add notes app under each of namespaces.
func (x *wakeIndex) add(app string, namespaces ...string) {
	// Every pass notes its namespaces, which are almost always noted
	// already: look under the read lock before taking the write lock.
	x.mu.RLock()
	noted := true
	for _, ns := range namespaces {
		noted = noted && slices.Contains(x.ns[ns], app)
	}
	x.mu.RUnlock()
	if noted {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, ns := range namespaces {
		if !slices.Contains(x.ns[ns], app) {
			x.ns[ns] = append(x.ns[ns], app)
		}
	}
}

// in are the apps noted under ns; the caller must not change them.
func (x *wakeIndex) in(ns string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.ns[ns]
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

// setWorkloads keeps the app's workloads among desired (runsIn) and
// notes their namespaces in the wake index.
func (p *pass) setWorkloads(desired []*unstructured.Unstructured) {
	p.r.set.Load().wakes.add(p.app.Name, p.st.setWorkloads(desired)...)
}
