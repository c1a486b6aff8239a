package reconciler

// What wakes an app's loop: a person or a webhook (Trigger), and the
// clusters' callbacks, which never block.

import (
	"cmp"
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/internal/wakes"
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

// router wakes the app loops a cluster's change concerns: the clusters'
// callbacks, which never block. It reads the Reconciler's app set as it
// stands at each call.
type router struct {
	set       *atomic.Pointer[appSet]
	log       *atomic.Pointer[slog.Logger] // the loop's, once it runs
	downAfter time.Duration
	narrow    bool // cluster.Handlers.PerNamespace
}

// apps is the app set, or none before New stores the first: a watch
// shared with discovery may call back while New makes the Reconciler.
func (r *router) apps() *appSet { return cmp.Or(r.set.Load(), noApps) }

var noApps = &appSet{wakes: wakes.New()}

// handlers tell the app loops of a cluster's changes (a spoke's; pinbot's
// own cluster also follows verify-only apps' objects).
func (r *router) handlers() cluster.Handlers {
	return cluster.Handlers{Changed: r.changed, InventoryChanged: r.inventoryChanged, WorkloadStatusChanged: r.workloadStatusChanged,
		Reachability: r.reachability, DownAfter: r.downAfter, PerNamespace: r.narrow}
}

// reachability is the clusters' callback: the cluster named name stopped
// answering (down) or answers again. It wakes the apps whose last pass
// read it, which then say Unknown, naming the cluster and its error, or
// prove again; it never blocks.
func (r *router) reachability(name string, down bool) {
	log := r.log.Load()
	if log == nil {
		log = logctx.From(context.Background())
	}
	log.Info("cluster reachability changed", "cluster", cmp.Or(name, "(pinbot's own)"), "down", down)
	for _, st := range r.apps().states {
		if c := st.cluster.Load(); c != nil && c.Name == name {
			signal(st.observe)
		}
	}
}

// changed is the Pod watches' callback: a Pod or ReplicaSet in namespace,
// owned by owners, changed. It wakes the apps it may belong to (runsIn),
// whose loops re-verify from their caches, so that a proof follows the
// Pods it is about; it never blocks.
func (r *router) changed(namespace string, owners []string) {
	s := r.apps()
	for _, name := range s.wakes.In(namespace) {
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
func (r *router) objectChanged(resource schema.GroupVersionResource, ns, name string) {
	if !deployer.IsDeployment(resource) {
		r.changed(ns, []string{name})
		return
	}
	for _, st := range r.apps().byDeployer[deployerKey(resource, ns, name)] {
		signal(st.observe)
	}
}

// passedHere says whether an app this process passes reads the
// deployer's object ns/name of resource: with shards, only those keep
// their content in the hub's caches (cluster.Handlers.ReadsObject).
func (r *router) passedHere(resource schema.GroupVersionResource, ns, name string) bool {
	for _, st := range r.apps().byDeployer[deployerKey(resource, ns, name)] {
		if st.ownedSince.Load() != 0 {
			return true
		}
	}
	return false
}

func deployerKey(res schema.GroupVersionResource, ns, name string) string {
	return res.Resource + "." + res.Group + "/" + ns + "/" + name
}

// inventoryChanged is the live cache's callback: an object of app's
// inventory changed its content (or appeared, or went away). It wakes a
// self-healing app's loop; it never blocks.
func (r *router) inventoryChanged(app string) {
	if st := r.apps().states[app]; st != nil {
		signal(st.wake)
	}
}

// workloadStatusChanged wakes app's loop to verify again when it awaits
// its sync's verification: a Deployment's status settles after its last
// Pod and ReplicaSet changed, and nothing else says when. An app not
// waiting is not woken by its workloads' status churn.
func (r *router) workloadStatusChanged(app string) {
	if st := r.apps().states[app]; st != nil && st.awaiting.Load() {
		signal(st.observe)
	}
}

// setWorkloads keeps the app's workloads among desired (runsIn) and
// notes their namespaces in the wake index.
func (p *pass) setWorkloads(desired []*unstructured.Unstructured) {
	p.r.set.Load().wakes.Add(p.app.Name, p.st.setWorkloads(desired)...)
}
