package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// diffWorkers bounds the concurrent server-side dry runs of one pass; the
// client's rate limit (100 requests/s) bounds them further.
const diffWorkers = 16

// driftState is what the drift diff and self-heal remember about one app
// between passes. Its zero value is ready to use.
type driftState struct {
	mu sync.Mutex
	// cache holds each object's last dry-run diff, valid while the live
	// object (uid, resourceVersion) and Git's rendering of it (config
	// hash) stay the same: an idle app is diffed without a dry run.
	cache map[ObjectRef]diffEntry
	guard warGuard
	// kinds are the inventory's kinds, watched for orphans; listed says
	// the one full inventory LIST was made.
	kinds  map[schema.GroupVersionKind]bool
	listed bool
	// last is the latest pass's drift and orphans, which follow-up passes
	// (no Git fetch, no diff) report unchanged.
	last        []Drift
	lastOrphans []ObjectRef
	// wake is signalled when an inventory object's content changes.
	wake chan struct{}
	// clusterDown is when the Kubernetes API stopped answering (zero
	// while it answers).
	clusterDown time.Time
}

type diffEntry struct {
	uid   types.UID
	rv    string
	hash  string
	drift []Drift // before ignore rules
}

// wakeup returns the channel signalled when the app's inventory changes.
func (ds *driftState) wakeup() chan struct{} {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.wake == nil {
		ds.wake = make(chan struct{}, 1)
	}
	return ds.wake
}

// lookup returns the cached diff of ref if live and hash still match it.
func (ds *driftState) lookup(ref ObjectRef, live *unstructured.Unstructured, hash string) ([]Drift, bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	e, ok := ds.cache[ref]
	if !ok || e.uid != live.GetUID() || e.rv != live.GetResourceVersion() || e.hash != hash {
		return nil, false
	}
	return e.drift, true
}

// store caches ref's diff. When Git's rendering of ref changed, its
// drift-war count starts over: a person changed the manifest.
func (ds *driftState) store(ref ObjectRef, live *unstructured.Unstructured, hash string, drift []Drift) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.cache == nil {
		ds.cache = map[ObjectRef]diffEntry{}
	}
	if prev, ok := ds.cache[ref]; ok && prev.hash != hash {
		ds.guard.reset(ref)
	}
	ds.cache[ref] = diffEntry{uid: live.GetUID(), rv: live.GetResourceVersion(), hash: hash, drift: drift}
}

// driftOf diffs every desired object present in live: a server-side apply
// dry run of Git's version (field manager "pinbot", forced) compared with
// the live object on the fields the dry run says pinbot owns (DriftOf).
// Objects unchanged since their last diff, on the cluster and in Git, reuse
// it. The app's ignore rules are applied last. An object found clean ends
// its drift war.
func (r *Reconciler) driftOf(ctx context.Context, app *App, st *appState, desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) ([]Drift, error) {
	type job struct {
		desired, live *unstructured.Unstructured
		hash          string
	}
	ds := &st.drift
	var raw []Drift
	var jobs []job
	for _, d := range desired {
		l := live[RefOf(d)]
		if l == nil {
			continue
		}
		h, err := ssa.ConfigHash(d)
		if err != nil {
			return nil, err
		}
		if drift, ok := ds.lookup(RefOf(d), l, h); ok {
			raw = append(raw, drift...)
			continue
		}
		jobs = append(jobs, job{desired: d, live: l, hash: h})
	}
	var (
		mu   sync.Mutex
		errs []error
		g    errgroup.Group
	)
	g.SetLimit(diffWorkers)
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			ref := RefOf(j.desired)
			dry, err := r.applier.ApplyObject(ctx, app.Name, j.desired, ssa.DryRun())
			var drift []Drift
			if err == nil {
				drift, err = DriftOf(dry, j.live, nil)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err) // every failure is reported, joined
				return nil
			}
			ds.store(ref, j.live, j.hash, drift)
			raw = append(raw, drift...)
			return nil
		})
	}
	_ = g.Wait() // the functions report through errs
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("diffing app %s: %w", app.Name, err)
	}
	out := withoutIgnored(raw, app.Ignore)
	sortDrift(out)
	drifted := map[ObjectRef]bool{}
	for _, d := range out {
		drifted[d.Object] = true
	}
	declared := make(map[ObjectRef]bool, len(desired))
	for _, d := range desired {
		declared[RefOf(d)] = true
	}
	ds.mu.Lock()
	for ref := range live {
		if !drifted[ref] {
			ds.guard.settle(ref)
		}
	}
	for ref := range ds.cache {
		if !declared[ref] {
			delete(ds.cache, ref) // Git no longer declares it
		}
	}
	ds.mu.Unlock()
	return out, nil
}

// withoutIgnored drops the drift that rules ignore.
func withoutIgnored(drift []Drift, rules []IgnoreRule) []Drift {
	if len(rules) == 0 {
		return drift
	}
	out := drift[:0:0]
	for _, d := range drift {
		if !Ignored(rules, d.Object, d.Pointer) {
			out = append(out, d)
		}
	}
	return out
}

func sortDrift(d []Drift) {
	sort.SliceStable(d, func(i, j int) bool {
		if d[i].Object != d[j].Object {
			return refLess(d[i].Object, d[j].Object)
		}
		return d[i].Path < d[j].Path
	})
}

// orphans lists the objects of app's inventory that desired no longer
// declares, from the watch caches. The first call lists the whole
// inventory once (every kind, in app's allowed namespaces) to learn its
// kinds; later calls watch those kinds and every kind desired holds.
func (r *Reconciler) orphans(ctx context.Context, app *App, st *appState, desired []*unstructured.Unstructured) ([]ObjectRef, error) {
	ds := &st.drift
	ds.mu.Lock()
	listed := ds.listed
	ds.mu.Unlock()
	var found []*unstructured.Unstructured
	if !listed {
		inv, err := r.applier.InventoryIn(ctx, app.Name, app.AllowNamespaces)
		if err != nil {
			return nil, err
		}
		found = inv
	}
	declared := make(map[ObjectRef]bool, len(desired))
	ds.mu.Lock()
	if ds.kinds == nil {
		ds.kinds = map[schema.GroupVersionKind]bool{}
	}
	for _, o := range found {
		ds.kinds[o.GroupVersionKind()] = true
	}
	ds.listed = true
	for _, d := range desired {
		declared[RefOf(d)] = true
		ds.kinds[d.GroupVersionKind()] = true
	}
	var specs []watchSpec
	for gvk := range ds.kinds {
		if m, err := r.applier.Mapping(gvk); err == nil {
			specs = append(specs, specsOf(app, gvk, m)...)
		}
	}
	ds.mu.Unlock()
	if err := r.lives.ensure(ctx, app.Name, specs); err != nil {
		return nil, err
	}
	seen := map[ObjectRef]bool{}
	var out []ObjectRef
	for _, s := range specs {
		objs, ok := r.lives.objects(app.Name, s)
		if !ok {
			objs = nil
			for _, o := range found { // a kind we may list once but not watch
				if o.GroupVersionKind() == s.gvk && (s.ns == "" || o.GetNamespace() == s.ns) {
					objs = append(objs, o)
				}
			}
		}
		for _, o := range objs {
			ref := RefOf(o)
			// An object being deleted (a prune's foreground deletion in
			// progress) is on its way out, not orphaned.
			if !declared[ref] && !seen[ref] && o.GetDeletionTimestamp() == nil && ssa.InInventory(o, app.Name) {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	sortRefs(out)
	return out, nil
}

// Diff compares app's current Git commit with the cluster and applies
// nothing, as `pinbot diff` does: drift per field Git sets (server-side
// apply dry runs), objects Git declares that the cluster lacks (Missing),
// and objects of the app's inventory Git no longer declares (Orphaned).
// Fields under the app's ignore rules are left out. When Git cannot be
// fetched the error is a *SourceError and there is no Diff.
func (r *Reconciler) Diff(ctx context.Context, name string) (*Diff, error) {
	a, st, err := r.app(name)
	if err != nil {
		return nil, err
	}
	commit, desired, err := r.load(ctx, a, st)
	if err != nil {
		return nil, err
	}
	live, err := r.live(ctx, a, desired)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	return r.diff(ctx, a, st, commit, desired, live)
}

// diff compares desired, app's placed render of commit, with live, the
// cluster's copies of those objects, and lists app's orphans: Diff's
// answer, for a render and a cluster read the caller already has.
func (r *Reconciler) diff(ctx context.Context, a *App, st *appState, commit string, desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) (*Diff, error) {
	d := &Diff{App: a.Name, Commit: commit, Drift: []Drift{}, Missing: []ObjectRef{}, Orphaned: []ObjectRef{}}
	drift, err := r.driftOf(ctx, a, st, desired, live)
	if err != nil {
		return nil, err
	}
	d.Drift = append(d.Drift, drift...)
	orphans, err := r.orphans(ctx, a, st, desired)
	if err != nil {
		return nil, err
	}
	d.Orphaned = append(d.Orphaned, orphans...)
	for _, o := range desired {
		if live[RefOf(o)] == nil {
			d.Missing = append(d.Missing, RefOf(o))
		}
	}
	sortRefs(d.Missing)
	d.Sync = Synced
	if !d.InSync() {
		d.Sync = OutOfSync
	}
	return d, nil
}
