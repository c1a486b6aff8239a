package cluster

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/object"
)

// cacheSyncTimeout bounds the first LIST of a new watch: an API server
// that does not answer is a transient fault, not a hang.
const cacheSyncTimeout = 30 * time.Second

// Lives follows the objects of every app's inventory with watches: one
// dynamic informer per kind and namespace (cluster-scoped kinds:
// cluster-wide), selecting the objects that carry the inventory label,
// and indexed by its value. A pass reads live state from these caches
// instead of LISTing every interval, so an idle, in-sync app costs the
// API server nothing per pass; and a thousand apps in twenty namespaces
// hold twenty watches per kind, not a thousand (each of which the API
// server ends every few minutes, to be opened again). Cached
// objects keep their content (the drift diff compares it) but lose their
// managed fields except a bare marker of pinbot's apply entry.
type Lives struct {
	dyn      dynamic.Interface
	onChange func(app string) // an inventory object changed; must not block
	// onStatus: only the status of a workload of app's inventory changed
	// (a Deployment's settles after its last Pod's and ReplicaSet's); nil
	// tells nobody; must not block.
	onStatus func(app string)
	alive    *liveness // told of every failed watch
	stop     chan struct{}

	startMu sync.Mutex // serialises starting watches
	mu      sync.Mutex
	closed  bool
	infs    map[liveKey]*liveInformer
}

// liveKey names one watch.
type liveKey struct {
	gvr schema.GroupVersionResource
	ns  string // "" for cluster-scoped kinds
}

// byApp is the informers' index: the inventory label's value.
const byApp = "app"

type liveInformer struct {
	gvk       schema.GroupVersionKind
	inf       cache.SharedIndexInformer // nil when listing is forbidden
	forbidden bool
	stop      chan struct{} // inf's own, for drop
}

func newLives(dyn dynamic.Interface, alive *liveness, onChange, onStatus func(app string)) *Lives {
	return &Lives{dyn: dyn, alive: alive, onChange: onChange, onStatus: onStatus, stop: make(chan struct{}), infs: map[liveKey]*liveInformer{}}
}

// close stops every watch.
func (c *Lives) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
}

// WatchSpec is one kind in one namespace to follow.
type WatchSpec struct {
	GVK schema.GroupVersionKind
	GVR schema.GroupVersionResource
	// Namespace is "" for a cluster-scoped kind.
	Namespace string
}

// Ensure starts the watches of specs not yet followed and waits until
// their caches hold a first LIST. A kind the API server will not
// let pinbot list is remembered as forbidden; its objects are then read
// one by one.
func (c *Lives) Ensure(ctx context.Context, app string, specs []WatchSpec) error {
	var syncs []cache.InformerSynced
	c.startMu.Lock()
	for _, s := range specs {
		key := liveKey{gvr: s.GVR, ns: s.Namespace}
		c.mu.Lock()
		li, closed := c.infs[key], c.closed
		c.mu.Unlock()
		if closed {
			c.startMu.Unlock()
			return fmt.Errorf("live cache closed")
		}
		if li == nil {
			var err error
			if li, err = c.start(ctx, key, s.GVK); err != nil {
				c.startMu.Unlock()
				return err
			}
		}
		if li.inf != nil {
			syncs = append(syncs, li.inf.HasSynced)
		}
	}
	c.startMu.Unlock()
	if len(syncs) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), syncs...) {
		return fmt.Errorf("waiting for the watches of app %s: %w", app, context.Cause(wctx))
	}
	return nil
}

// start probes that key's kind may be listed, then starts its informer.
func (c *Lives) start(ctx context.Context, key liveKey, gvk schema.GroupVersionKind) (*liveInformer, error) {
	sel := object.LabelApp // the label exists
	var ri dynamic.ResourceInterface = c.dyn.Resource(key.gvr)
	if key.ns != "" {
		ri = c.dyn.Resource(key.gvr).Namespace(key.ns)
	}
	li := &liveInformer{gvk: gvk}
	_, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1})
	switch {
	case apierrors.IsForbidden(err):
		li.forbidden = true
	case err != nil:
		return nil, fmt.Errorf("listing %s in %q: %w", key.gvr.GroupResource(), key.ns, err)
	default:
		gi := dynamicinformer.NewFilteredDynamicInformer(c.dyn, key.gvr, key.ns, 0, cache.Indexers{byApp: appOf},
			func(o *metav1.ListOptions) { o.LabelSelector = sel })
		inf := gi.Informer()
		if err := inf.SetTransform(trimLive(gvk)); err != nil {
			return nil, fmt.Errorf("watching %s: %w", key.gvr.GroupResource(), err)
		}
		if err := c.alive.watch(inf); err != nil {
			return nil, err
		}
		changed := func(o any) {
			if apps, _ := appOf(o); len(apps) == 1 {
				c.onChange(apps[0])
			}
		}
		workload := deployer.IsWorkload(gvk.Group, gvk.Kind)
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(o any, initial bool) {
				if !initial {
					changed(o)
				}
			},
			UpdateFunc: func(o, n any) {
				ou, ok1 := o.(*unstructured.Unstructured)
				nu, ok2 := n.(*unstructured.Unstructured)
				switch {
				case !ok1 || !ok2 || contentChanged(ou, nu):
					changed(n)
					if ok1 && ok2 && ou.GetLabels()[object.LabelApp] != nu.GetLabels()[object.LabelApp] {
						changed(o) // it left an app's inventory
					}
				case c.onStatus != nil && workload && !reflect.DeepEqual(ou.Object["status"], nu.Object["status"]):
					if apps, _ := appOf(n); len(apps) == 1 {
						c.onStatus(apps[0])
					}
				}
			},
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				changed(o)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", key.gvr.GroupResource(), err)
		}
		li.inf, li.stop = inf, make(chan struct{})
		go inf.Run(either(c.stop, li.stop))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.infs[key] = li
	return li, nil
}

// drop stops the watches of namespace ns and forgets their objects, as
// Objects.drop does; the next Ensure starts them again.
func (c *Lives) drop(ns string) {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, li := range c.infs {
		if key.ns == ns {
			if li.stop != nil {
				close(li.stop)
			}
			delete(c.infs, key)
		}
	}
}

// Objects returns the cached objects of app for spec, and false when the
// kind is forbidden (not cached). The objects are shared: do not modify.
func (c *Lives) Objects(app string, s WatchSpec) ([]*unstructured.Unstructured, bool) {
	c.mu.Lock()
	li := c.infs[liveKey{gvr: s.GVR, ns: s.Namespace}]
	c.mu.Unlock()
	if li == nil || li.inf == nil {
		return nil, false
	}
	objs, err := li.inf.GetIndexer().ByIndex(byApp, app)
	if err != nil {
		return nil, false // the index is registered before the informer runs
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, true
}

// appOf indexes a live object by the app whose inventory holds it.
func appOf(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if app := u.GetLabels()[object.LabelApp]; app != "" {
		return []string{app}, nil
	}
	return nil, nil
}

// trimLive sets the object's kind (watch events may lack it) and drops its
// managed fields, keeping only a bare marker that pinbot applied it.
func trimLive(gvk schema.GroupVersionKind) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		u.SetGroupVersionKind(gvk)
		var keep []metav1.ManagedFieldsEntry
		for _, mf := range u.GetManagedFields() {
			if mf.Manager == object.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
				keep = append(keep, metav1.ManagedFieldsEntry{Manager: mf.Manager, Operation: mf.Operation})
				break
			}
		}
		if keep == nil {
			unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		} else {
			u.SetManagedFields(keep)
		}
		return u, nil
	}
}

// contentChanged reports whether an update changed more than status and
// bookkeeping (resourceVersion, generation, managed fields): only such a
// change can be drift. A workload's status updates are told apart
// (onStatus): the app waiting for its rollout to settle looks again.
func contentChanged(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		out := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "status" && k != "metadata" {
				out[k] = v
			}
		}
		if m, ok := u.Object["metadata"].(map[string]any); ok {
			mm := make(map[string]any, len(m))
			for k, v := range m {
				if k != "resourceVersion" && k != "generation" && k != "managedFields" {
					mm[k] = v
				}
			}
			out["metadata"] = mm
		}
		return out
	}
	return !reflect.DeepEqual(strip(a), strip(b))
}
