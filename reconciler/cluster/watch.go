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

	"pinbot.dev/pinbot/reconciler/verdict"
)

// Watcher keeps list/watch caches of what verification reads: Pods,
// ReplicaSets and ControllerRevisions, and Nodes. Where pinbot may list
// them in every namespace (the pinbot-observe ClusterRole), one cache of
// each kind covers the cluster, indexed by namespace: a thousand apps in
// a thousand namespaces then cost three watches, not three thousand.
// Otherwise there is one cache of each per namespace apps write to.
// Cached objects are trimmed to the fields verification uses, to keep an
// idle reconciler small. Snapshots read the caches; no pass GETs a Pod.
type Watcher struct {
	client   kubernetes.Interface
	onChange func(namespace string, owners []string)
	alive    *liveness // told of every failed watch
	stop     chan struct{}

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
	nodes  cache.SharedIndexInformer
}

type nsCache struct {
	pods, replicaSets, revisions cache.SharedIndexInformer
}

// newWatcher returns a Watcher whose failed watches alive hears of.
// onChange, when not nil, is called (from an informer goroutine; it must
// not block) after a Pod or ReplicaSet in a watched namespace changes,
// with the names of the object's owners (none for a bare Pod, or a
// deletion whose last state is unknown).
func newWatcher(client kubernetes.Interface, alive *liveness, onChange func(namespace string, owners []string)) *Watcher {
	return &Watcher{client: client, alive: alive, onChange: onChange, stop: make(chan struct{}), spaces: map[string]*nsCache{}}
}

// scope decides, at the first watch, whether the caches cover the
// cluster: they do when pinbot may list Pods, ReplicaSets and
// ControllerRevisions in all namespaces.
func (w *Watcher) scope(ctx context.Context) (wide bool, err error) {
	w.scopeMu.Lock()
	defer w.scopeMu.Unlock()
	if w.scoped {
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
// waits until they have synced or ctx ends.
func (w *Watcher) Watch(ctx context.Context, namespaces []string) error {
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
		f := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTransform(trim))
		w.nodes = f.Core().V1().Nodes().Informer()
		if err := w.alive.watch(w.nodes); err != nil {
			w.mu.Unlock()
			return err
		}
		f.Start(w.stop)
	}
	syncs = append(syncs, w.nodes.HasSynced)
	for _, ns := range keys {
		c := w.spaces[ns]
		if c == nil {
			f := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithNamespace(ns), informers.WithTransform(trim))
			c = &nsCache{
				pods:        f.Core().V1().Pods().Informer(),
				replicaSets: f.Apps().V1().ReplicaSets().Informer(),
				revisions:   f.Apps().V1().ControllerRevisions().Informer(),
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
			f.Start(w.stop)
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

// Prewarm starts the caches of the whole cluster, when pinbot may read
// all of it (scope), and returns at once: a replica that will pass apps
// lists them while it waits for its shards, not in its apps' first
// passes. A watcher confined to namespaces starts nothing, since which
// ones it needs is for the apps to say. A failure is left to those
// passes, which watch again.
func (w *Watcher) Prewarm(ctx context.Context) {
	go func() {
		if wide, err := w.scope(ctx); err == nil && wide {
			_ = w.Watch(ctx, nil)
		}
	}()
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
				s.Pods = append(s.Pods, o.(*cachedPod).pod())
			}
		}
		for _, p := range owned.Pods {
			if p.Namespace != ns {
				continue
			}
			if o, ok, _ := c.pods.GetIndexer().GetByKey(p.String()); ok {
				s.Pods = append(s.Pods, o.(*cachedPod).pod())
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

// close stops every informer.
func (w *Watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
}

// trim keeps only what verification reads, before an object enters a
// cache: metadata without managed fields; for Pods a cachedPod, of which
// a snapshot gets a *corev1.Pod back; for ReplicaSets and
// ControllerRevisions their revision's label and annotation, not their
// spec or data. A kubelet's Pods carry far more (volume mounts,
// resources, the last termination, the whole spec), which a watch of
// every Pod of a fleet would otherwise hold.
func trim(obj any) (any, error) {
	meta := func(m *metav1.ObjectMeta, label, annotation string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			Labels: only(m.Labels, label), Annotations: only(m.Annotations, annotation), OwnerReferences: m.OwnerReferences,
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return cachePod(o), nil
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{ObjectMeta: meta(&o.ObjectMeta, appsv1.DefaultDeploymentUniqueLabelKey, verdict.RevisionAnnotation)}, nil
	case *appsv1.ControllerRevision:
		return &appsv1.ControllerRevision{ObjectMeta: meta(&o.ObjectMeta, appsv1.ControllerRevisionHashLabelKey, ""), Revision: o.Revision}, nil
	case *corev1.Node:
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: o.Status.NodeInfo.OperatingSystem, Architecture: o.Status.NodeInfo.Architecture}}}, nil
	}
	return obj, nil
}

// only is m with key alone, or nil without it.
func only(m map[string]string, key string) map[string]string {
	if v, ok := m[key]; ok && key != "" {
		return map[string]string{key: v}
	}
	return nil
}
