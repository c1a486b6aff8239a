// Package cluster keeps what pinbot knows of each cluster it reads and
// applies to: its clients, the watch caches that passes read instead of
// LISTing (Pods and their owners, the apps' inventories, the workloads of
// verify-only apps), whether those caches may be trusted, and the spokes'
// clients made from Argo CD's and Flux's cluster Secrets. It decides
// nothing about apps: the reconciler reads and applies through it, the
// way gitops-engine keeps its cluster cache apart from its sync engine.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/ssa"
)

// Cluster is where Pods run and are read: the cluster pinbot runs
// against, or another one an Argo CD destination names (a spoke). Each
// has its own clients, rate limit and watch caches, so a spoke that does
// not answer holds up only its own apps.
type Cluster struct {
	// Name is "" for pinbot's own cluster; a spoke's name, else its
	// server.
	Name, Server string
	// Labels are the labels of the Secret that reaches a spoke: what a
	// release wave's selector picks clusters by.
	Labels  map[string]string
	Applier *ssa.Applier
	// Dynamic is the cluster's dynamic client, for what pinbot writes
	// there beside an app (its Proof).
	Dynamic dynamic.Interface
	// Pods are the watch caches of what verification reads.
	Pods *Watcher
	// Lives are the watch caches of the apps' inventories pinbot applies
	// here.
	Lives *Lives
	// Objects are the watch caches of the workloads verify-only apps
	// read here, and on pinbot's own cluster the deployers' objects.
	Objects *Objects
	// alive says whether the caches may be trusted: see liveness.
	alive *liveness
}

// Handlers are told what changed in a cluster's caches. Each is called
// from an informer goroutine and must not block.
type Handlers struct {
	// Changed: a Pod or ReplicaSet in namespace changed; owners names
	// its owners (none for a bare Pod, or a deletion whose last state is
	// unknown).
	Changed func(namespace string, owners []string)
	// InventoryChanged: an object of app's inventory changed.
	InventoryChanged func(app string)
	// WorkloadStatusChanged: only the status of a workload of app's
	// inventory changed.
	WorkloadStatusChanged func(app string)
	// ObjectChanged: an object a verify-only app reads changed.
	ObjectChanged func(gvr schema.GroupVersionResource, ns, name string)
	// ReadsObject, when not nil, says whether an app passed here reads
	// the deployer's object ns/name of gvr: Objects then keeps the
	// content of those alone, and of the others their names and
	// versions (a replica of serve that holds some shards). After the
	// apps passed here grow, Objects.Fill reads what they now need.
	ReadsObject func(gvr schema.GroupVersionResource, ns, name string) bool
	// Reachability: the cluster named name ("" for pinbot's own) has not
	// answered for DownAfter since a watch failed (down), or answers
	// again (up).
	Reachability func(name string, down bool)
	// DownAfter is how long a cluster may go unanswered before
	// Reachability says down; DefaultDownAfter when 0.
	DownAfter time.Duration
	// PerNamespace keeps the Pods' caches to the namespaces the apps
	// passed here read, dropping each once none does (Watcher.Forget),
	// with the watches of that namespace's workloads and inventories,
	// even where pinbot may list the whole cluster: a replica of serve
	// that holds some shards.
	PerNamespace bool
}

// New returns the cluster the clients reach (md lists inventories'
// metadata), its caches empty until first read. name and server are ""
// for pinbot's own cluster.
// syncTimeout, when not 0, bounds the first fill of the Pods' caches.
func New(name, server string, kube kubernetes.Interface, dyn dynamic.Interface, md metadata.Interface, h Handlers, syncTimeout time.Duration) *Cluster {
	alive := newLiveness(probeVersion(kube), time.Now)
	c := &Cluster{
		Name: name, Server: server, Dynamic: dyn,
		Applier: ssa.New(dyn, md, kube.Discovery()),
		Pods:    newWatcher(kube, alive, h.Changed, h.PerNamespace),
		Lives:   newLives(dyn, alive, h.InventoryChanged, h.WorkloadStatusChanged),
		Objects: newObjects(dyn, alive, h.ObjectChanged, h.ReadsObject),
		alive:   alive,
	}
	c.Pods.syncTimeout = syncTimeout
	c.Pods.onDrop = func(ns string) { c.Objects.drop(ns); c.Lives.drop(ns) }
	if h.Reachability != nil {
		alive.follow(cmp.Or(h.DownAfter, DefaultDownAfter), func(down bool) { h.Reachability(name, down) })
	}
	return c
}

// Close stops c's watches.
func (c *Cluster) Close() {
	c.alive.stop()
	c.Pods.close()
	c.Lives.close()
	c.Objects.close()
}

// Answers returns nil when c's watch caches may be read: its API server
// answered lately and no watch has failed since, or it answers now. The
// error names c when c is a spoke.
func (c *Cluster) Answers(ctx context.Context) error {
	return c.Fault(c.alive.check(ctx))
}

// Error is a spoke that could not be read: its apps are Unknown,
// and the error names the cluster. Credentials never show in it.
type Error struct {
	Cluster, Server string
	Err             error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Server == "" {
		return redact.String(fmt.Sprintf("cluster %s: %s", e.Cluster, e.Err))
	}
	return redact.String(fmt.Sprintf("cluster %s (%s): %s", e.Cluster, redact.URL(e.Server), e.Err))
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Fault names c in err, when c is a spoke.
func (c *Cluster) Fault(err error) error {
	if c.Name == "" || err == nil {
		return err
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Cluster: c.Name, Server: c.Server, Err: err}
}
