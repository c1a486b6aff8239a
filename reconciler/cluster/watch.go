package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/reconciler/cluster/compact"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Watcher keeps list/watch caches of what verification reads: Pods,
// ReplicaSets and ControllerRevisions, and Nodes. Where pinbot may list
// them in every namespace (the pinbot-observe ClusterRole), one cache of
// each kind covers the cluster, indexed by namespace: a thousand apps in
// a thousand namespaces then cost three watches, not three thousand.
// Otherwise, and always when narrow (a replica of serve that holds some
// shards), there is one cache of each per namespace its apps write to,
// dropped once no app passed here reads it any more (Forget): a replica
// then holds its own apps' Pods, not the cluster's. Cached objects are trimmed to the fields verification uses, to keep an
// idle reconciler small. Snapshots read the caches; no pass GETs a Pod.
type Watcher struct {
	client   kubernetes.Interface
	onChange func(namespace string, owners []string)
	alive    *liveness // told of every failed watch
	stop     chan struct{}

	// narrow keeps the caches to the namespaces apps read, even where
	// pinbot may list all of them.
	narrow bool
	// onDrop, when set, is told of each namespace whose caches Forget
	// stopped, after they stopped.
	onDrop func(namespace string)

	// syncTimeout, when set, bounds the wait for new caches to fill (a
	// spoke's, which may not answer); 0 waits as long as the caller.
	syncTimeout time.Duration

	// scoped says wide was decided (scope): whether the caches cover the
	// cluster, under the key "" of spaces.
	scopeMu sync.Mutex
	scoped  bool
	wide    bool

	mu     sync.Mutex
	closed bool
	spaces map[string]*nsCache // by namespace, or "" for the cluster
	// readers are, by namespace, the apps whose passes read its cache
	// (narrow or namespaced caches only).
	readers map[string]map[string]bool
	nodes   cache.SharedIndexInformer
}

type nsCache struct {
	pods, replicaSets, revisions cache.SharedIndexInformer
	stop                         chan struct{}
}

// newWatcher returns a Watcher whose failed watches alive hears of.
// onChange, when not nil, is called (from an informer goroutine; it must
// not block) after a Pod or ReplicaSet in a watched namespace changes,
// with the names of the object's owners (none for a bare Pod, or a
// deletion whose last state is unknown). narrow keeps the caches to the
// namespaces apps read.
func newWatcher(client kubernetes.Interface, alive *liveness, onChange func(namespace string, owners []string), narrow bool) *Watcher {
	return &Watcher{client: client, alive: alive, onChange: onChange, narrow: narrow, stop: make(chan struct{}),
		spaces: map[string]*nsCache{}, readers: map[string]map[string]bool{}}
}

// scope decides, at the first watch, whether the caches cover the
// cluster: they do when pinbot may list Pods, ReplicaSets and
// ControllerRevisions in all namespaces, unless the watcher is narrow.
func (w *Watcher) scope(ctx context.Context) (wide bool, err error) {
	w.scopeMu.Lock()
	defer w.scopeMu.Unlock()
	if w.scoped || w.narrow {
		return w.wide, nil
	}
	one := metav1.ListOptions{Limit: 1}
	wide = true
	for _, list := range []func() error{
		func() error { _, err := w.client.CoreV1().Pods("").List(ctx, one); return err },
		func() error { _, err := w.client.AppsV1().ReplicaSets("").List(ctx, one); return err },
		func() error { _, err := w.client.AppsV1().ControllerRevisions("").List(ctx, one); return err },
	} {
		switch err := list(); {
		case apierrors.IsForbidden(err):
			wide = false
		case err != nil:
			return false, fmt.Errorf("listing what verification reads in all namespaces: %w", err)
		}
	}
	w.scoped, w.wide = true, wide
	return wide, nil
}

// Watch starts the caches for namespaces (and Nodes) not yet watched and
// waits until they have synced or ctx ends. app reads them: they stay
// until Forget(app) and every other reader's.
func (w *Watcher) Watch(ctx context.Context, app string, namespaces []string) error {
	wide, err := w.scope(ctx)
	if err != nil {
		return err
	}
	keys := namespaces
	if wide {
		keys = []string{""}
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("watcher closed")
	}
	var syncs []cache.InformerSynced
	if w.nodes == nil {
		f := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTransform(compact.Trim))
		w.nodes = f.Core().V1().Nodes().Informer()
		if err := w.alive.watch(w.nodes); err != nil {
			w.mu.Unlock()
			return err
		}
		f.Start(w.stop)
	}
	syncs = append(syncs, w.nodes.HasSynced)
	for _, ns := range keys {
		if !wide && app != "" {
			if w.readers[ns] == nil {
				w.readers[ns] = map[string]bool{}
			}
			w.readers[ns][app] = true
		}
		c := w.spaces[ns]
		if c == nil {
			f := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithNamespace(ns), informers.WithTransform(compact.Trim))
			c = &nsCache{
				pods:        f.Core().V1().Pods().Informer(),
				replicaSets: f.Apps().V1().ReplicaSets().Informer(),
				revisions:   f.Apps().V1().ControllerRevisions().Informer(),
				stop:        make(chan struct{}),
			}
			for _, inf := range []cache.SharedIndexInformer{c.pods, c.replicaSets, c.revisions} {
				if err := inf.AddIndexers(cache.Indexers{controllerIndex: byController}); err != nil {
					w.mu.Unlock()
					return fmt.Errorf("indexing the caches of %q: %w", ns, err)
				}
				if err := w.alive.watch(inf); err != nil {
					w.mu.Unlock()
					return err
				}
			}
			if w.onChange != nil {
				notify := func(o any) { w.onChange(namespaceOf(o), ownerNames(o)) }
				h := cache.ResourceEventHandlerFuncs{AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(_, n any) { notify(n) }}
				if _, err := c.pods.AddEventHandler(h); err != nil {
					w.mu.Unlock()
					return fmt.Errorf("watching pods in %q: %w", ns, err)
				}
				if _, err := c.replicaSets.AddEventHandler(h); err != nil {
					w.mu.Unlock()
					return fmt.Errorf("watching replicasets in %q: %w", ns, err)
				}
			}
			f.Start(c.stop)
			w.spaces[ns] = c
		}
		syncs = append(syncs, c.pods.HasSynced, c.replicaSets.HasSynced, c.revisions.HasSynced)
	}
	w.mu.Unlock()
	if w.syncTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.syncTimeout)
		defer cancel()
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return fmt.Errorf("waiting for the pod caches of %v: %w", namespaces, context.Cause(ctx))
	}
	return nil
}

// Owned names what verifying an app reads of the caches: the Pods,
// ReplicaSets and ControllerRevisions its live workloads (by UID)
// control, the Pods of those ReplicaSets, and its bare Pods.
type Owned struct {
	Workloads []types.UID
	Pods      []types.NamespacedName
}

// FillOwned copies into s the cached Pods, ReplicaSets and
// ControllerRevisions of namespaces that owned names, and all Nodes: an
// app's pass costs its own Pods, not every Pod of a namespace thousands
// of apps share. Watch them first.
func (w *Watcher) FillOwned(s *verdict.Snapshot, namespaces []string, owned Owned) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.Pods, s.ReplicaSets, s.Revisions, s.Nodes = nil, nil, nil, nil
	for _, ns := range namespaces {
		c := w.spaces[ns]
		if c == nil {
			c = w.spaces[""]
		}
		if c == nil {
			continue
		}
		owners := slices.Clone(owned.Workloads)
		for _, uid := range owned.Workloads {
			for _, o := range controlledBy(c.replicaSets, uid, ns) {
				rs := o.(*appsv1.ReplicaSet)
				s.ReplicaSets = append(s.ReplicaSets, rs)
				owners = append(owners, rs.UID)
			}
			for _, o := range controlledBy(c.revisions, uid, ns) {
				s.Revisions = append(s.Revisions, o.(*appsv1.ControllerRevision))
			}
		}
		for _, uid := range owners {
			for _, o := range controlledBy(c.pods, uid, ns) {
				s.Pods = append(s.Pods, o.(*compact.Pod).Expand())
			}
		}
		for _, p := range owned.Pods {
			if p.Namespace != ns {
				continue
			}
			if o, ok, _ := c.pods.GetIndexer().GetByKey(p.String()); ok {
				s.Pods = append(s.Pods, o.(*compact.Pod).Expand())
			}
		}
	}
	if w.nodes != nil {
		for _, o := range w.nodes.GetStore().List() {
			s.Nodes = append(s.Nodes, o.(*corev1.Node))
		}
	}
	sort.Slice(s.Pods, func(i, j int) bool {
		a, b := s.Pods[i], s.Pods[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
}

// controllerIndex indexes the caches by the UID of each object's
// controller.
const controllerIndex = "controller"

func byController(o any) ([]string, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if c := metav1.GetControllerOfNoCopy(m); c != nil {
		return []string{string(c.UID)}, nil
	}
	return nil, nil
}

// controlledBy are the objects inf caches in namespace ns whose
// controller is uid.
func controlledBy(inf cache.SharedIndexInformer, uid types.UID, ns string) []any {
	objs, err := inf.GetIndexer().ByIndex(controllerIndex, string(uid))
	if err != nil {
		return nil // the index is always there
	}
	out := objs[:0:0]
	for _, o := range objs {
		if namespaceOf(o) == ns {
			out = append(out, o)
		}
	}
	return out
}

// namespaceOf is o's namespace; o may be a deletion's tombstone.
func namespaceOf(o any) string {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		ns, _, _ := cache.SplitMetaNamespaceKey(t.Key)
		return ns
	}
	if m, ok := o.(metav1.Object); ok {
		return m.GetNamespace()
	}
	return ""
}

// ownerNames are the names of o's owners; o may be a deletion's
// tombstone, whose owners are unknown.
func ownerNames(o any) []string {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil
	}
	refs := m.GetOwnerReferences()
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Name
	}
	return names
}

// Forget says app's passes no longer read the caches here (another
// replica passes it now): the caches of the namespaces no app passed
// here reads any more stop, and their objects go.
func (w *Watcher) Forget(app string) {
	var dropped []string
	defer func() {
		for _, ns := range dropped {
			if w.onDrop != nil {
				w.onDrop(ns)
			}
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	for ns, apps := range w.readers {
		if !apps[app] {
			continue
		}
		delete(apps, app)
		if len(apps) > 0 {
			continue
		}
		delete(w.readers, ns)
		if c := w.spaces[ns]; c != nil && !w.closed {
			close(c.stop)
			delete(w.spaces, ns)
			dropped = append(dropped, ns)
		}
	}
}

// Namespaces are the namespaces whose caches run, "" for the cluster's.
func (w *Watcher) Namespaces() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.spaces))
	for ns := range w.spaces {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// close stops every informer.
func (w *Watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.stop)
		for _, c := range w.spaces {
			close(c.stop)
		}
	}
}
