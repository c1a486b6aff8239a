package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/reconciler/cluster/compact"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/object"
)

// Objects follows the objects verify-only apps read, in one cluster:
// on the hub, the deployers' objects (Argo CD's Applications, Flux's
// Kustomizations and HelmReleases and their sources); in every cluster,
// the workloads the deployers applied. There is one watch per kind and
// namespace, started after the first read that succeeds: a pass then reads
// these objects from memory, so an idle verify-only app costs the API
// server no request, however many apps there are. A read waits a moment
// (syncWithin) for a watch's first LIST; past it, for a kind pinbot may
// get but not list, and when the API server does not answer (see
// liveness), a read is a GET. The objects
// a watch of discovery's holds are read from it instead (Share).
type Objects struct {
	dyn   dynamic.Interface
	alive *liveness // the cluster's: told of every failed watch
	stop  chan struct{}
	// onChange, when not nil, is told of every change of a deployer's
	// object or a workload (reported); it must not block.
	onChange func(gvr schema.GroupVersionResource, ns, name string)
	// reads, when not nil, picks the deployers' objects whose content the
	// watches keep (Handlers.ReadsObject). Of the others they keep a
	// stub, the name and version; a read of a stub is a GET, whose
	// answer is held (in held) for as long as the watch says the object
	// has not changed since.
	reads func(gvr schema.GroupVersionResource, ns, name string) bool

	mu        sync.Mutex
	closed    bool
	infs      map[objectKey]cache.SharedIndexInformer
	stops     map[objectKey]chan struct{} // each watch's own, for drop
	forbidden map[objectKey]bool          // may not be listed: read by GET
	held      map[heldKey]*rawObject      // the content of stubs read since
	shared    map[objectKey][]Shared      // read where Objects has no watch of its own
	rereading chan struct{}               // closed once the last Reread ends
}

type objectKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

type heldKey struct {
	objectKey
	name string
}

func newObjects(dyn dynamic.Interface, alive *liveness, onChange func(gvr schema.GroupVersionResource, ns, name string),
	reads func(gvr schema.GroupVersionResource, ns, name string) bool) *Objects {
	return &Objects{dyn: dyn, alive: alive, onChange: onChange, reads: reads, stop: make(chan struct{}), infs: map[objectKey]cache.SharedIndexInformer{},
		stops: map[objectKey]chan struct{}{}, forbidden: map[objectKey]bool{}, held: map[heldKey]*rawObject{}, shared: map[objectKey][]Shared{}}
}

// reported says whether a change of resource is news for the apps that
// read it: a deployer's object, whose status says what the deployer did
// (the real kustomize-controller writes lastAppliedRevision well after
// the push webhook woke pinbot, and before any Pod of the new revision
// exists), or a workload, whose status says where a rollout is (a
// Deployment's status settles after its last Pod's and ReplicaSet's
// events, which the Pod watch reports).
func reported(resource schema.GroupVersionResource) bool {
	return deployer.IsDeployment(resource) || workloadKinds[resource]
}

var workloadKinds = map[schema.GroupVersionResource]bool{
	{Group: "apps", Version: "v1", Resource: "deployments"}:  true,
	{Group: "apps", Version: "v1", Resource: "statefulsets"}: true,
	{Group: "apps", Version: "v1", Resource: "daemonsets"}:   true,
}

// close stops every watch.
func (c *Objects) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
}

// drop stops the watches of namespace ns, and forgets their objects: no
// app passed here reads its Pods any more (Watcher.Forget). A later read
// starts them again.
func (c *Objects) drop(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.infs {
		if key.ns == ns {
			close(c.stops[key])
			delete(c.infs, key)
			delete(c.stops, key)
		}
	}
	for key := range c.held {
		if key.ns == ns {
			delete(c.held, key)
		}
	}
}

// either is closed once a or b is.
func either(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(out)
	}()
	return out
}

// Get returns the object ns/name of gvr: from the watch once it holds a
// first LIST, unless fresh, else by GET. An object its own watch does not
// hold is NotFound, as a GET would say; one a shared watch does not hold
// is read by GET, and watched from then on. The caller may modify the
// object.
func (c *Objects) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, fresh bool) (*unstructured.Unstructured, error) {
	key := objectKey{gvr: gvr, ns: ns}
	c.mu.Lock()
	inf, forbidden, shared := c.infs[key], c.forbidden[key], len(c.shared[key]) > 0
	c.mu.Unlock()
	if inf != nil && !fresh && !inf.HasSynced() { // a watch just started (a takeover's) lists sooner than each app would GET
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, syncWithin, true, func(context.Context) (bool, error) { return inf.HasSynced(), nil })
	}
	if (inf != nil && inf.HasSynced() || inf == nil && shared) && !fresh && c.alive.check(ctx) == nil {
		version, raw, ok := c.kept(key, name)
		if !ok && inf != nil {
			return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
		}
		if ok && raw == nil {
			raw = c.content(ctx, heldKey{key, name}, version)
		}
		if u, ok := fromCache(&rawObject{raw: raw}); ok {
			return u, nil
		}
	}
	u, err := c.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return u, err
	}
	if _, _, ok := c.kept(key, name); ok {
		c.hold(key, u.DeepCopy())
	} else if inf == nil && !forbidden {
		c.start(ctx, key)
	}
	return u, err
}

// syncWithin is how long a read waits for its watch's first LIST
// before it reads by GET.
const syncWithin = 2 * time.Second

// kept is what the watch of key keeps of the object name, its own or
// else a shared one: its version and JSON, nil for a stub; ok is false
// when no watch holds it.
func (c *Objects) kept(key objectKey, name string) (version string, raw []byte, ok bool) {
	c.mu.Lock()
	inf, shared := c.infs[key], c.shared[key]
	c.mu.Unlock()
	if inf != nil {
		obj, exists, err := inf.GetIndexer().GetByKey(key.ns + "/" + name)
		o, isRaw := obj.(*rawObject)
		if err != nil || !exists || !isRaw {
			return "", nil, false
		}
		return o.ResourceVersion, o.raw, true
	}
	for _, s := range shared {
		if version, raw, ok := s.Kept(key.ns, name); ok && s.HasSynced() {
			return version, raw, true
		}
	}
	return "", nil, false
}

// content is the content held for a stub at version, once a Reread
// under way has ended; nil when none is held.
func (c *Objects) content(ctx context.Context, key heldKey, version string) []byte {
	if c.reads == nil {
		return nil
	}
	c.mu.Lock()
	rereading := c.rereading
	c.mu.Unlock()
	if rereading != nil {
		select {
		case <-rereading:
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.held[key]
	if h == nil || h.ResourceVersion != version {
		delete(c.held, key) // changed since: a GET reads it again
		return nil
	}
	return h.raw
}

// hold keeps u's content when the watch of key keeps a stub of u at u's
// version: the content of an object an app passed here reads since the
// watch last saw it change.
func (c *Objects) hold(key objectKey, u *unstructured.Unstructured) {
	if c.reads == nil || !deployer.IsDeployment(key.gvr) {
		return
	}
	if version, raw, ok := c.kept(key, u.GetName()); !ok || raw != nil || version != u.GetResourceVersion() {
		return
	}
	kept, err := compactObject(u)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[heldKey{key, u.GetName()}] = kept.(*rawObject)
}

// Reread reads the content of the deployers' objects that the apps
// passed here read, and that their watches keep as stubs, after this
// replica took shards: one LIST per kind and namespace, from the API
// server's watch cache as a watch's first is, instead of a GET per app.
// The reads of stubs wait for it from the call on, and what it misses
// they read by GET; it returns the listing, to run once the apps taken
// are passed here (Handlers.ReadsObject). The shards a replica takes at
// once (at its start) are listed for once: a listing leaves its apps to
// a Reread called within rereadAfter of it, whose listing they wait for.
func (c *Objects) Reread() func(context.Context) {
	if c.reads == nil {
		return func(context.Context) {}
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.rereading = done
	c.mu.Unlock()
	return func(ctx context.Context) {
		defer close(done)
		ctx, cancel := context.WithTimeout(ctx, rereadWithin)
		defer cancel()
		select {
		case <-time.After(rereadAfter):
		case <-ctx.Done():
		}
		c.mu.Lock()
		last := c.rereading
		c.mu.Unlock()
		if last != done { // a later Reread lists for these apps too
			select {
			case <-last:
			case <-ctx.Done():
			}
			return
		}
		c.reread(ctx)
	}
}

// rereadWithin bounds a Reread, which the reads of stubs wait for: past
// it they read by GET. rereadAfter is how long a listing waits for the
// shards taken with its own.
const rereadWithin, rereadAfter = 30 * time.Second, 250 * time.Millisecond

func (c *Objects) reread(ctx context.Context) {
	c.mu.Lock()
	watched := map[objectKey]bool{}
	for key := range c.infs {
		watched[key] = deployer.IsDeployment(key.gvr)
	}
	for key, shared := range c.shared { // listed for the stubs their JSON does not fill
		for _, s := range shared {
			watched[key] = s.Trim() > 0 || watched[key]
		}
	}
	for key := range c.held { // those passed elsewhere now
		if !c.reads(key.gvr, key.ns, key.name) {
			delete(c.held, key)
		}
	}
	c.mu.Unlock()
	for key, deployers := range watched {
		if !deployers {
			continue
		}
		list, err := c.dyn.Resource(key.gvr).Namespace(key.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			continue
		}
		for i := range list.Items {
			if u := &list.Items[i]; c.reads(key.gvr, u.GetNamespace(), u.GetName()) {
				c.hold(key, u)
			}
		}
	}
}

// Fill reads the objects of want that live lacks, as ssa's GetMissing
// does, but through get: from the watches of their kinds and namespaces.
// A kind mapping cannot resolve (not served) leaves its objects missing,
// as does an object that does not exist.
func (c *Objects) Fill(ctx context.Context, mapping func(schema.GroupVersionKind) (*meta.RESTMapping, error), want, live map[object.Ref]*unstructured.Unstructured, fresh bool) error {
	for ref, d := range want {
		if live[ref] != nil {
			continue
		}
		m, err := mapping(d.GroupVersionKind())
		if err != nil {
			continue // kind not served: missing
		}
		ns := d.GetNamespace()
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		u, err := c.Get(ctx, m.Resource, ns, d.GetName(), fresh)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading %s: %w", ref, err)
		default:
			live[ref] = u
		}
	}
	return nil
}

// start probes that key's kind may be listed, and starts its watch;
// a kind that may not be listed is remembered, and read by GET.
func (c *Objects) start(ctx context.Context, key objectKey) {
	_, err := c.dyn.Resource(key.gvr).Namespace(key.ns).List(ctx, metav1.ListOptions{Limit: 1})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.infs[key] != nil || c.forbidden[key] {
		return
	}
	if err != nil {
		// Forbidden, or the API server did not answer: the next read
		// tries again, unless pinbot may not list.
		if apierrors.IsForbidden(err) {
			c.forbidden[key] = true
		}
		return
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dyn, key.gvr, key.ns, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(c.keep(key))
	_ = c.alive.watch(inf) // fails only once inf runs
	if c.onChange != nil && reported(key.gvr) {
		notify := func(o any) {
			if m, err := meta.Accessor(o); err == nil {
				c.onChange(key.gvr, m.GetNamespace(), m.GetName())
			} else if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				if ns, name, err := cache.SplitMetaNamespaceKey(d.Key); err == nil {
					c.onChange(key.gvr, ns, name)
				}
			}
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(_, n any) { notify(n) },
		}) // fails only once inf has stopped
	}
	c.infs[key], c.stops[key] = inf, make(chan struct{})
	go inf.Run(either(c.stop, c.stops[key]))
}

// keep is how the watch of key keeps its objects: compacted, or as stubs
// when no app passed here reads them (reads). The content held for a
// stub goes once the watch keeps the object's own.
func (c *Objects) keep(key objectKey) cache.TransformFunc {
	if c.reads == nil || !deployer.IsDeployment(key.gvr) {
		return compactObject
	}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if ok && !c.reads(key.gvr, u.GetNamespace(), u.GetName()) {
			return &rawObject{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), ResourceVersion: u.GetResourceVersion()}}, nil
		}
		if ok {
			c.mu.Lock()
			delete(c.held, heldKey{key, u.GetName()})
			c.mu.Unlock()
		}
		return compactObject(obj)
	}
}

// compactObject is an object as Objects keeps it: its JSON
// (compact.JSON), and the metadata the store keys it by.
func compactObject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	raw, err := compact.JSON(u)
	if err != nil {
		return nil, err
	}
	return &rawObject{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), ResourceVersion: u.GetResourceVersion()}, raw: raw}, nil
}

// fromCache decodes an object compactObject kept, into an Unstructured the
// caller owns.
func fromCache(obj any) (*unstructured.Unstructured, bool) {
	o, ok := obj.(*rawObject)
	if !ok || o.raw == nil { // a stub
		return nil, false
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(o.raw); err != nil {
		return nil, false
	}
	return u, true
}

// rawObject is an object's JSON, with the metadata a store needs; a
// stub has no JSON.
type rawObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	raw []byte // never written after compactObject
}

func (o *rawObject) DeepCopyObject() runtime.Object {
	c := *o
	c.ObjectMeta = *o.ObjectMeta.DeepCopy()
	return &c
}
