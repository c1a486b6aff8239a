package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

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
		if live[RefOf(o)] == nil && !isHook(o) {
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

// diffWorkers bounds the concurrent server-side dry runs of one pass; the
// client's rate limit (100 requests/s) bounds them further.
const diffWorkers = 16

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
	var raw []Drift
	var jobs []job
	for _, d := range desired {
		l := live[RefOf(d)]
		if l == nil || isHook(d) {
			continue // hooks are never drift: a sync runs them
		}
		h, err := ssa.ConfigHash(d)
		if err != nil {
			return nil, err
		}
		if drift, ok := st.cachedDiff(RefOf(d), l, h); ok {
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
			st.storeDiff(ref, j.live, j.hash, drift)
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
	st.mu.Lock()
	for ref := range live {
		if !drifted[ref] {
			st.guard.settle(ref)
		}
	}
	for ref := range st.diffs {
		if !declared[ref] {
			delete(st.diffs, ref) // Git no longer declares it
		}
	}
	st.mu.Unlock()
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
