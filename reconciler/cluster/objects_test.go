package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/discover"
)

// Objects keeps an object's JSON, less what pinbot never reads, and
// every read decodes a copy of its own.
func TestCompactObject(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": "web", "namespace": "argocd", "resourceVersion": "42",
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{…}", "team": "web"},
		},
		"spec":   map[string]any{"project": "default"},
		"status": map[string]any{"sync": map[string]any{"revision": "abc"}},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply}})
	obj, err := compactObject(u)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err != nil || key != "argocd/web" {
		t.Fatalf("store key %q, %v; want argocd/web", key, err)
	}
	a, ok := fromCache(obj)
	if !ok {
		t.Fatal("fromCache: not decoded")
	}
	if a.GetManagedFields() != nil || a.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Errorf("kept managed fields %v or the last applied copy", a.GetManagedFields())
	}
	if a.GetAnnotations()["team"] != "web" || a.GetResourceVersion() != "42" {
		t.Errorf("lost metadata: %v", a.Object["metadata"])
	}
	if rev, _, _ := unstructured.NestedString(a.Object, "status", "sync", "revision"); rev != "abc" {
		t.Errorf("status.sync.revision %q, want abc", rev)
	}
	unstructured.SetNestedField(a.Object, "changed", "spec", "project")
	b, _ := fromCache(obj)
	if p, _, _ := unstructured.NestedString(b.Object, "spec", "project"); p != "default" {
		t.Errorf("a read's change reached the cache: spec.project %q", p)
	}
	if other, err := compactObject("tombstone"); err != nil || other != "tombstone" {
		t.Errorf("compactObject of another type = %v, %v; want it unchanged", other, err)
	}
}

// A sharded replica's watch of the deployers' objects keeps the content
// of those its apps read, and stubs of the others: a stub's read is one
// GET, held while the object is unchanged; after the replica takes more
// apps, one listing (Reread) reads theirs.
func TestObjectsKeepWhatTheAppsPassedHereRead(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{deployer.ApplicationsResource: "ApplicationList"},
		app("a", "1", "Succeeded"), app("b", "1", "Succeeded"))
	var mu sync.Mutex
	passed := map[string]bool{"a": true}
	reads := func(_ schema.GroupVersionResource, _, name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return passed[name]
	}
	c := newObjects(dyn, newLiveness(func(context.Context) error { return nil }, time.Now), nil, reads)
	t.Cleanup(c.close)
	gets := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "get" {
				n++
			}
		}
		return n
	}
	phaseOf(t, c, "a") // starts the watch
	key := objectKey{gvr: deployer.ApplicationsResource, ns: "argocd"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		inf := c.infs[key]
		c.mu.Unlock()
		if inf != nil && inf.HasSynced() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Applications' watch never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stored := func(name string) *rawObject {
		c.mu.Lock()
		inf := c.infs[key]
		c.mu.Unlock()
		obj, _, _ := inf.GetIndexer().GetByKey("argocd/" + name)
		o, _ := obj.(*rawObject)
		return o
	}
	if o := stored("a"); o == nil || o.raw == nil {
		t.Fatal("the content of a, read here, is not kept")
	}
	if o := stored("b"); o == nil || o.raw != nil || o.ResourceVersion != "1" {
		t.Fatalf("b, read elsewhere, kept as %+v; want a stub at version 1", o)
	}
	before := gets()
	if p := phaseOf(t, c, "a"); p != "Succeeded" || gets() != before {
		t.Errorf("a read as %q with %d GETs; want Succeeded from the watch", p, gets()-before)
	}
	if p := phaseOf(t, c, "b"); p != "Succeeded" || gets() != before+1 {
		t.Errorf("b read as %q with %d GETs; want Succeeded with one", p, gets()-before)
	}
	if p := phaseOf(t, c, "b"); p != "Succeeded" || gets() != before+1 {
		t.Errorf("b read again as %q with %d GETs in all; want it held", p, gets()-before)
	}
	// b changes: what was held is stale, and the next read asks again.
	if _, err := dyn.Resource(deployer.ApplicationsResource).Namespace("argocd").Update(ctx, app("b", "2", "Running"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for stored("b").ResourceVersion != "2" {
		if time.Now().After(deadline) {
			t.Fatal("the watch never saw b change")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p := phaseOf(t, c, "b"); p != "Running" || gets() != before+2 {
		t.Errorf("b read after its change as %q with %d GETs in all; want Running, read again", p, gets()-before)
	}
	// This replica takes b's shard: one listing reads b, and no pass GETs it.
	mu.Lock()
	passed["b"] = true
	mu.Unlock()
	c.mu.Lock()
	delete(c.held, heldKey{key, "b"})
	c.mu.Unlock()
	c.Reread()(ctx)
	if p := phaseOf(t, c, "b"); p != "Running" || gets() != before+2 {
		t.Errorf("b read after Reread as %q with %d GETs in all; want Running from the listing", p, gets()-before)
	}
	// b changes again: the watch keeps its content now, and what was
	// held for its stub goes.
	if _, err := dyn.Resource(deployer.ApplicationsResource).Namespace("argocd").Update(ctx, app("b", "3", "Succeeded"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for o := stored("b"); o.ResourceVersion != "3" || o.raw == nil; o = stored("b") {
		if time.Now().After(deadline) {
			t.Fatalf("the watch keeps b as %+v; want its content at version 3", o)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.mu.Lock()
	held := len(c.held)
	c.mu.Unlock()
	if held != 0 {
		t.Errorf("%d contents held once the watch keeps b's own; want none", held)
	}
}

// Objects reads the deployers' objects a shared watch (discovery's)
// holds from it, and starts no watch of its own. The watch keeps every
// object's JSON until the replica takes its first shards, so that
// takeover lists nothing; a stub (an object no app passed here read
// when it last changed) is read by GET once and held, or by a Reread's
// listing; a change is read from the watch and told to the apps.
func TestObjectsReadASharedWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{deployer.ApplicationsResource: "ApplicationList"},
		app("a", "1", "Succeeded"), app("b", "1", "Succeeded"), app("c", "1", "Succeeded"))
	w := discover.Watch(ctx, dyn, []config.Discovery{{ArgoCD: &config.ArgoCDSelector{}}})
	if err := w.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	passed := map[string]bool{}
	var changed []string
	reads := func(_ schema.GroupVersionResource, _, name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return passed[name]
	}
	pass := func(name string) {
		mu.Lock()
		defer mu.Unlock()
		passed[name] = true
	}
	onChange := func(_ schema.GroupVersionResource, _, name string) {
		mu.Lock()
		defer mu.Unlock()
		changed = append(changed, name)
	}
	c := newObjects(dyn, newLiveness(func(context.Context) error { return nil }, time.Now), onChange, reads)
	t.Cleanup(c.close)
	for _, s := range w.Shares() {
		c.Share(s)
	}
	requests := func() (gets, lists int) {
		for _, a := range dyn.Actions() {
			switch a.GetVerb() {
			case "get":
				gets++
			case "list":
				lists++
			}
		}
		return gets, lists
	}
	update := func(u *unstructured.Unstructured) {
		t.Helper()
		if _, err := dyn.Resource(deployer.ApplicationsResource).Namespace("argocd").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	await := func(name, phase string) {
		t.Helper()
		for phaseOf(t, c, name) != phase {
			if time.Now().After(deadline) {
				t.Fatalf("%s's change to %s never read", name, phase)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// b changes before this replica takes any shard: the watch keeps
	// its JSON, as every object's until then.
	update(app("b", "2", "Succeeded"))
	for version, raw, _ := c.kept(objectKey{gvr: deployer.ApplicationsResource, ns: "argocd"}, "b"); version != "2" || raw == nil; version, raw, _ = c.kept(objectKey{gvr: deployer.ApplicationsResource, ns: "argocd"}, "b") {
		if time.Now().After(deadline) {
			t.Fatalf("the watch keeps b at version %s with %d bytes; want its JSON at version 2", version, len(raw))
		}
		time.Sleep(10 * time.Millisecond)
	}
	gets0, lists0 := requests()
	// This replica takes the shards of a and b at once, as at its start:
	// the watch still keeps every object's JSON, so neither the two
	// takeovers' one listing nor the reads ask the API server.
	first, second := c.Reread(), c.Reread()
	pass("a")
	pass("b")
	var wg sync.WaitGroup
	for _, listing := range []func(context.Context){first, second} {
		wg.Go(func() { listing(ctx) })
	}
	wg.Wait()
	if a, b := phaseOf(t, c, "a"), phaseOf(t, c, "b"); a != "Succeeded" || b != "Succeeded" {
		t.Fatalf("a and b read as %q and %q", a, b)
	}
	if gets, lists := requests(); gets != gets0 || lists != lists0 {
		t.Errorf("the first takeover and its reads made %d GETs and %d LISTs; want none", gets-gets0, lists-lists0)
	}
	// The takeover trimmed what no app passed here reads: c is a stub,
	// read by one GET, whose answer is held.
	for range 2 {
		if p := phaseOf(t, c, "c"); p != "Succeeded" {
			t.Fatalf("c read as %q", p)
		}
	}
	if gets, _ := requests(); gets != gets0+1 {
		t.Errorf("two reads of c's stub made %d GETs; want one, then the content held", gets-gets0)
	}
	// c changes while passed elsewhere, then this replica takes its
	// shard: one listing reads it, and its read GETs nothing.
	update(app("c", "2", "Running"))
	for version, raw, _ := c.kept(objectKey{gvr: deployer.ApplicationsResource, ns: "argocd"}, "c"); version != "2" || raw != nil; version, raw, _ = c.kept(objectKey{gvr: deployer.ApplicationsResource, ns: "argocd"}, "c") {
		if time.Now().After(deadline) {
			t.Fatalf("the watch keeps c at version %s with %d bytes; want a stub at version 2", version, len(raw))
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, lists1 := requests()
	reread := c.Reread()
	pass("c")
	reread(ctx)
	gets1, lists2 := requests()
	if p := phaseOf(t, c, "c"); p != "Running" || lists2 != lists1+1 {
		t.Errorf("c after Reread: %q with %d LISTs; want it read by one", p, lists2-lists1)
	}
	// c changes again: the watch keeps its content now, tells the apps,
	// and what was held for its stub goes.
	update(app("c", "3", "Succeeded"))
	await("c", "Succeeded")
	if gets, _ := requests(); gets != gets1 {
		t.Errorf("reads of c after its changes made %d GETs; want none", gets-gets1)
	}
	mu.Lock()
	told := slices.Contains(changed, "c")
	mu.Unlock()
	if !told {
		t.Error("c's change was not told to the apps")
	}
	c.mu.Lock()
	own, held := len(c.infs), len(c.held)
	c.mu.Unlock()
	if own != 0 {
		t.Errorf("Objects started %d watches of its own; want it to read the shared one", own)
	}
	if held != 0 {
		t.Errorf("%d contents held once the watch keeps each object's own; want none", held)
	}
}

// The reads that arrive while a namespace's new watch lists wait for
// that listing instead of each making a GET: a takeover's apps in one
// namespace cost the API server one LIST, not a GET each.
func TestObjectsReadsWaitForANewWatch(t *testing.T) {
	ctx := context.Background()
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	var objs []runtime.Object
	for i := range 10 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": fmt.Sprintf("web-%d", i), "namespace": "shop", "resourceVersion": "1"}}})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{deployments: "DeploymentList"}, objs...)
	dyn.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(300 * time.Millisecond) // a busy API server's listing
		return false, nil, nil
	})
	c := newObjects(dyn, newLiveness(func(context.Context) error { return nil }, time.Now), nil, nil)
	t.Cleanup(c.close)
	if _, err := c.Get(ctx, deployments, "shop", "web-0", false); err != nil { // a GET, then the watch starts
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i < 10; i++ {
		wg.Go(func() {
			if u, err := c.Get(ctx, deployments, "shop", fmt.Sprintf("web-%d", i), false); err != nil || u.GetName() != fmt.Sprintf("web-%d", i) {
				t.Errorf("web-%d read as %v, %v", i, u, err)
			}
		})
	}
	wg.Wait()
	gets := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("10 reads while the namespace's watch listed made %d GETs; want 1, the read that started it", gets)
	}
}

// app is the Argo CD Application argocd/name at version rv, whose last
// operation ended in phase.
func app(name, rv, phase string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "resourceVersion": rv},
		"status":   map[string]any{"operationState": map[string]any{"phase": phase}}}}
}

// phaseOf reads the Application argocd/name through c, and returns its
// last operation's phase.
func phaseOf(t *testing.T, c *Objects, name string) string {
	t.Helper()
	u, err := c.Get(context.Background(), deployer.ApplicationsResource, "argocd", name, false)
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
	return p
}
