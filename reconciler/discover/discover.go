// Package discover finds the verify-only apps a config's discover:
// entries select: it lists and watches Argo CD Applications and Flux
// Kustomizations, and says when the set of selected apps changes, so the
// apps come and go with their objects.
package discover

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/reconciler/cluster/compact"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

func resourceOf(d config.Discovery) schema.GroupVersionResource {
	switch {
	case d.Kind() == deployer.ArgoCD:
		return deployer.ApplicationsResource
	case d.Flux.HelmReleases():
		return deployer.HelmReleasesResource
	}
	return deployer.KustomizationsResource
}

// selected is what a discovery sees of an object.
func selected(u *unstructured.Unstructured) config.Selected {
	project, _, _ := unstructured.NestedString(u.Object, "spec", "project")
	return config.Selected{Namespace: u.GetNamespace(), Name: u.GetName(), Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Project: project, Repos: sourceRepos(u),
		Destination: destinationOf(u)}
}

// destinationOf is where u deploys to, "CLUSTER/NAMESPACE" with ""
// for the cluster the deployer runs in, or "" when u names no namespace
// (config.App.Destination).
func destinationOf(u *unstructured.Unstructured) string {
	if u.GetKind() == deployer.ApplicationKind {
		var d deployer.ApplicationDestination
		m, _, _ := unstructured.NestedMap(u.Object, "spec", "destination")
		d.Server, _ = m["server"].(string)
		d.Name, _ = m["name"].(string)
		d.Namespace, _ = m["namespace"].(string)
		if d.Namespace == "" {
			return ""
		}
		if d.InCluster() {
			return "/" + d.Namespace
		}
		return cmp.Or(d.Name, d.Server) + "/" + d.Namespace
	}
	ns, _, _ := unstructured.NestedString(u.Object, "spec", "targetNamespace")
	if ns == "" {
		return ""
	}
	secret, _, _ := unstructured.NestedString(u.Object, "spec", "kubeConfig", "secretRef", "name")
	return secret + "/" + ns
}

// sourceRepos are the repoURLs of an Application's spec.source and
// spec.sources, each once, in order.
func sourceRepos(u *unstructured.Unstructured) []string {
	var out []string
	add := func(src any) {
		m, _ := src.(map[string]any)
		if url, _ := m["repoURL"].(string); url != "" && !slices.Contains(out, url) {
			out = append(out, url)
		}
	}
	if src, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "source"); ok {
		add(src)
	}
	if srcs, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "sources"); ok {
		list, _ := srcs.([]any)
		for _, src := range list {
			add(src)
		}
	}
	return out
}

// keeper reduces the objects one discovery watches to what its
// selection reads, before they enter the cache: of the labels, those its
// selector names; of the annotations, pinbot.dev/verify. The objects
// that keep the same of either share one map: ten thousand Applications
// then hold the few distinct sets a selector's keys take, not a map
// each.
type keeper struct {
	keys map[string]bool // the label selector's
	// serving is what Share.Serve set: which objects' JSON to keep too,
	// and whom to tell of changes. Until trimmed (Share.Trim), the JSON
	// of every object is kept.
	serving atomic.Pointer[serving]
	trimmed atomic.Bool

	mu   sync.Mutex
	sets map[string]map[string]string // by their entries, key NUL value NUL
}

// serving is a Share's reader (cluster.Objects): the objects whose JSON
// the watch keeps, every one when reads is nil, and its callback.
type serving struct {
	reads   func(ns, name string) bool
	changed func(ns, name string)
}

// newKeeper returns d's keeper.
func newKeeper(d config.Discovery) *keeper {
	k := &keeper{keys: map[string]bool{}, sets: map[string]map[string]string{}}
	k.serving.Store(&serving{changed: func(string, string) {}})
	if sel, err := labels.Parse(d.LabelSelector()); err == nil {
		reqs, _ := sel.Requirements()
		for _, r := range reqs {
			k.keys[r.Key()] = true
		}
	}
	return k
}

// keep is the watch's transform.
func (k *keeper) keep(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	s := selected(u)
	s.Labels = k.shared(s.Labels, func(key string) bool { return k.keys[key] })
	s.Annotations = k.shared(s.Annotations, func(key string) bool { return key == config.VerifyAnnotation })
	o := &selectedObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()},
		sel:        s,
	}
	if reads := k.serving.Load().reads; reads == nil || !k.trimmed.Load() || reads(s.Namespace, s.Name) {
		raw, err := compact.JSON(u)
		if err != nil {
			return nil, err
		}
		o.raw.Store(&raw)
	}
	return o, nil
}

// shared is the entries of m that want keeps, as the one map every
// object keeping the same entries shares (nil for none); no one writes
// it.
func (k *keeper) shared(m map[string]string, want func(string) bool) map[string]string {
	var keys []string
	for key := range m {
		if want(key) {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, key := range keys {
		b.WriteString(key + "\x00" + m[key] + "\x00")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if set, ok := k.sets[b.String()]; ok {
		return set
	}
	set := make(map[string]string, len(keys))
	for _, key := range keys {
		set[key] = m[key]
	}
	k.sets[b.String()] = set
	return set
}

// selectedObject is an object as the discovery cache keeps it: what
// selected read of it, and the metadata the store keys it by.
type selectedObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	sel config.Selected // never written after keeper.keep
	// raw is the object's JSON for a Share's reader, nil for a stub; a
	// Trim drops it where the reader reads it no more.
	raw atomic.Pointer[[]byte]
}

func (o *selectedObject) DeepCopyObject() runtime.Object {
	c := &selectedObject{TypeMeta: o.TypeMeta, ObjectMeta: *o.ObjectMeta.DeepCopy(), sel: o.sel}
	c.raw.Store(o.raw.Load())
	return c
}

// appsOf returns the apps of objs (per discovery, in the discoveries'
// order), sorted by name within each discovery.
func appsOf(ds []config.Discovery, objs [][]config.Selected) []config.App {
	var out []config.App
	for i, d := range ds {
		var apps []config.App
		matches := d.Matcher()
		for _, o := range objs[i] {
			if matches(o) {
				apps = append(apps, d.App(o))
			}
		}
		slices.SortFunc(apps, func(a, b config.App) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, apps...)
	}
	return out
}

// List returns the apps ds select now.
func List(ctx context.Context, dyn dynamic.Interface, ds []config.Discovery) ([]config.App, error) {
	objs := make([][]config.Selected, len(ds))
	for i, d := range ds {
		list, err := dyn.Resource(resourceOf(d)).Namespace(d.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: d.LabelSelector()})
		if err != nil {
			return nil, fmt.Errorf("discover[%d]: listing %s in %s: %w (grant pinbot read access with the deployers component)", i, resourceOf(d).Resource, d.Namespace(), err)
		}
		for j := range list.Items {
			objs[i] = append(objs[i], selected(&list.Items[j]))
		}
	}
	return appsOf(ds, objs), nil
}

// Watcher watches the objects of ds through informers, one per
// discovery, filtered by its namespace and label selector on the server.
// Its caches answer Apps: a start reads the objects once, in the
// informers' first list, and a change reads nothing more.
type Watcher struct {
	ds      []config.Discovery
	shares  []*Share
	stores  []cache.Store
	synced  []cache.InformerSynced
	changed chan struct{}
	// dirty asks for a look at the caches (compare): the events of a
	// burst (the informers' first list, a resync of thousands of
	// Applications) cost one look or two, not one each.
	dirty chan struct{}

	mu       sync.Mutex
	last     []string // the names of the apps last reported
	reported bool     // Apps was called: Changed compares with last
	failed   []error  // per discovery, its informer's last list or watch error
}

// Watch starts watching until ctx ends. Changed fires once Apps has
// reported a set, when the selected set differs from it. The watches
// keep the JSON of every object they hold for their Shares' reader, and
// once trimmed (a sharded replica's), of those it reads.
func Watch(ctx context.Context, dyn dynamic.Interface, ds []config.Discovery) *Watcher {
	w := &Watcher{ds: ds, changed: make(chan struct{}, 1), dirty: make(chan struct{}, 1), failed: make([]error, len(ds))}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.dirty:
				w.compare()
			}
		}
	}()
	for i, d := range ds {
		selector := d.LabelSelector()
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 10*time.Minute, d.Namespace(),
			func(o *metav1.ListOptions) { o.LabelSelector = selector })
		inf := f.ForResource(resourceOf(d)).Informer()
		k := newKeeper(d)
		_ = inf.SetTransform(k.keep) // fails only once inf runs
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			cache.DefaultWatchErrorHandler(ctx, r, err)
			w.mu.Lock()
			w.failed[i] = fmt.Errorf("discover[%d]: listing %s in %s: %w (grant pinbot read access with the deployers component)", i, resourceOf(d).Resource, d.Namespace(), err)
			w.mu.Unlock()
		})
		changed := func(o any) {
			w.check()
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				k.serving.Load().changed(ns, name)
			}
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    changed,
			UpdateFunc: func(_, o any) { changed(o) },
			DeleteFunc: changed,
		})
		w.shares = append(w.shares, &Share{d: d, inf: inf, keeper: k})
		w.stores = append(w.stores, inf.GetStore())
		w.synced = append(w.synced, inf.HasSynced)
		f.Start(ctx.Done())
	}
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), w.synced...) {
			w.check()
		}
	}()
	return w
}

// Synced waits until every informer has listed its objects. While one
// has not, its last failure is the error (a discovery pinbot may not
// read says so at once instead of waiting); the informer keeps trying.
func (w *Watcher) Synced(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		all := true
		for i, s := range w.synced {
			if s() {
				continue
			}
			all = false
			w.mu.Lock()
			err := w.failed[i]
			w.mu.Unlock()
			if err != nil {
				return err
			}
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Shares are the Watcher's watches, for the deployers' reads
// (cluster.Objects.Share): each object they hold is then read from the
// API server once.
func (w *Watcher) Shares() []*Share { return w.shares }

// Share is one discovery's watch, shared with the deployers' reads: it
// implements cluster.Shared.
type Share struct {
	d      config.Discovery
	inf    cache.SharedIndexInformer
	keeper *keeper
}

func (s *Share) Resource() schema.GroupVersionResource { return resourceOf(s.d) }
func (s *Share) Namespace() string                     { return s.d.Namespace() }
func (s *Share) HasSynced() bool                       { return s.inf.HasSynced() }

// Kept returns the version of ns/name and its JSON, nil for a stub.
func (s *Share) Kept(ns, name string) (version string, raw []byte, ok bool) {
	obj, exists, err := s.inf.GetStore().GetByKey(ns + "/" + name)
	o, isKept := obj.(*selectedObject)
	if err != nil || !exists || !isKept {
		return "", nil, false
	}
	if raw := o.raw.Load(); raw != nil {
		return o.ResourceVersion, *raw, true
	}
	return o.ResourceVersion, nil, true
}

// Trim drops the JSON of the objects the reader does not read (Serve),
// which the watch kept of every object until now, and keeps only theirs
// from then on. It returns how many objects the reader reads are stubs:
// those that changed after it was served and before its apps came.
func (s *Share) Trim() (stubs int) {
	s.keeper.trimmed.Store(true)
	reads := s.keeper.serving.Load().reads
	for _, obj := range s.inf.GetStore().List() {
		o, ok := obj.(*selectedObject)
		switch {
		case !ok || reads == nil:
		case !reads(o.Namespace, o.Name):
			o.raw.Store(nil)
		case o.raw.Load() == nil:
			stubs++
		}
	}
	return stubs
}

// Serve has the watch keep the JSON of the objects reads picks (all when
// nil) from its next event on, and tell changed of every change.
func (s *Share) Serve(reads func(ns, name string) bool, changed func(ns, name string)) {
	s.keeper.serving.Store(&serving{reads: reads, changed: changed})
}

// Changed receives when the selected apps differ from the last set Apps
// reported.
func (w *Watcher) Changed() <-chan struct{} { return w.changed }

// Apps returns the apps selected now, from the informers' caches, and
// notes them as reported.
func (w *Watcher) Apps() []config.App {
	apps := w.current()
	w.mu.Lock()
	w.last, w.reported = names(apps), true
	w.mu.Unlock()
	return apps
}

func (w *Watcher) current() []config.App {
	objs := make([][]config.Selected, len(w.ds))
	for i, s := range w.stores {
		for _, o := range s.List() {
			if k, ok := o.(*selectedObject); ok {
				objs[i] = append(objs[i], k.sel)
			}
		}
	}
	return appsOf(w.ds, objs)
}

// check asks for a look at the caches; it never blocks.
func (w *Watcher) check() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// compare signals Changed when the caches are synced and select another
// set of apps than the last reported (none before the first report).
func (w *Watcher) compare() {
	for _, s := range w.synced {
		if !s() {
			return
		}
	}
	now := names(w.current())
	w.mu.Lock()
	same := !w.reported || slices.Equal(now, w.last)
	w.mu.Unlock()
	if same {
		return
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func names(apps []config.App) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Name
	}
	slices.Sort(out)
	return out
}
