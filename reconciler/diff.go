package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/ssa"
	"pinbot.dev/pinbot/reconciler/status"
)

// Diff is what `pinbot diff` reports for an app: every field out of sync, the
// objects Git declares that the cluster lacks (Missing) and the objects
// carrying the app's inventory label that Git no longer renders
// (Orphaned), compared against Commit.
type Diff struct {
	App    string           `json:"app"`
	Commit string           `json:"commit"`
	Sync   status.SyncState `json:"sync"`
	// Fields lists the fields out of sync, by object then path.
	Fields   []diff.Field `json:"fields"`
	Missing  []object.Ref `json:"missing"`
	Orphaned []object.Ref `json:"orphaned"`
}

// InSync reports whether the diff found nothing.
func (d *Diff) InSync() bool { return len(d.Fields)+len(d.Missing)+len(d.Orphaned) == 0 }

// Diff compares app's current Git commit with the cluster and applies
// nothing, as `pinbot diff` does: each field Git sets that differs (server-side
// apply dry runs), objects Git declares that the cluster lacks (Missing),
// and objects of the app's inventory Git no longer declares (Orphaned).
// Fields under the app's ignore rules are left out. When Git cannot be
// fetched the error is a *gitsource.Error and there is no Diff.
func (r *Reconciler) Diff(ctx context.Context, name string) (*Diff, error) {
	app, st, err := r.app(name)
	if err != nil {
		return nil, err
	}
	st.passMu.Lock()
	defer st.passMu.Unlock()
	p := r.newPass(ctx, app, st, modeObserve, nil)
	if err := p.reach(ctx); err != nil {
		return nil, err
	}
	if err := p.load(ctx); err != nil {
		return nil, err
	}
	if p.live, err = p.c.Live(ctx, app.Name, app.AllowNamespaces, p.desired); err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	return p.diff(ctx)
}

// diff is Diff's answer for the pass's render and cluster read.
func (p *pass) diff(ctx context.Context) (*Diff, error) {
	d := &Diff{App: p.app.Name, Commit: p.o.Commit, Fields: []diff.Field{}, Missing: []object.Ref{}, Orphaned: []object.Ref{}}
	fields, err := p.fieldDiffs(ctx, p.desired, p.live)
	if err != nil {
		return nil, err
	}
	d.Fields = append(d.Fields, fields...)
	orphans, err := p.orphans(ctx)
	if err != nil {
		return nil, err
	}
	d.Orphaned = append(d.Orphaned, orphans...)
	for _, o := range p.desired {
		if p.live[object.RefOf(o)] == nil && !hook.Is(o) {
			d.Missing = append(d.Missing, object.RefOf(o))
		}
	}
	object.Sort(d.Missing)
	d.Sync = status.Synced
	if !d.InSync() {
		d.Sync = status.OutOfSync
	}
	return d, nil
}

// appliedClean notes each object the sync applied as without drift at the
// resourceVersion the apply left it: a dry run of the same manifest on
// top of it changes nothing. The next pass then dry-runs only the
// objects someone (a controller's status update included) changed since.
func (p *pass) appliedClean(applied []*unstructured.Unstructured) {
	desired := make(map[object.Ref]*unstructured.Unstructured, len(p.desired))
	for _, d := range p.desired {
		desired[object.RefOf(d)] = d
	}
	if p.st.diffs == nil {
		p.st.diffs = map[object.Ref]cachedDiff{}
	}
	for _, a := range applied {
		ref := object.RefOf(a)
		d := desired[ref]
		if d == nil || hook.Is(d) {
			continue
		}
		h, err := object.ConfigHash(d)
		if err != nil {
			continue // the next pass's diff says why
		}
		if prev, ok := p.st.diffs[ref]; ok && prev.hash != h {
			p.st.guard.Reset(ref)
		}
		p.st.diffs[ref] = cachedDiff{uid: a.GetUID(), rv: a.GetResourceVersion(), hash: h}
	}
}

// diffWorkers bounds the concurrent server-side dry runs of one pass; the
// client's rate limit (100 requests/s) bounds them further.
const diffWorkers = 16

// fieldDiffs diffs every desired object present in live: a server-side
// apply dry run of Git's version (field manager "pinbot", forced) compared
// with the live object on the fields the dry run says pinbot owns
// (diff.Fields). Objects unchanged since their last diff, on the cluster
// and in Git, reuse it. The app's ignore rules are applied last. An object
// found clean ends its drift war.
func (p *pass) fieldDiffs(ctx context.Context, desired []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) ([]diff.Field, error) {
	type job struct {
		desired, live *unstructured.Unstructured
		hash          string
	}
	st := p.st
	var raw []diff.Field
	var jobs []job
	for _, d := range desired {
		l := live[object.RefOf(d)]
		if l == nil || hook.Is(d) {
			continue // hooks are never drift: a sync runs them
		}
		h, err := object.ConfigHash(d)
		if err != nil {
			return nil, err
		}
		if c, ok := st.diffs[object.RefOf(d)]; ok && c.uid == l.GetUID() && c.rv == l.GetResourceVersion() && c.hash == h {
			raw = append(raw, c.fields...)
			continue
		}
		jobs = append(jobs, job{desired: d, live: l, hash: h})
	}
	var (
		mu    sync.Mutex
		errs  []error
		fresh = map[object.Ref]cachedDiff{}
		g     errgroup.Group
	)
	g.SetLimit(diffWorkers)
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			dry, err := p.c.Applier.ApplyObject(ctx, p.app.Name, j.desired, ssa.DryRun())
			var fields []diff.Field
			if err == nil {
				fields, err = diff.Fields(dry, j.live, nil)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err) // every failure is reported, joined
				return nil
			}
			fresh[object.RefOf(j.desired)] = cachedDiff{uid: j.live.GetUID(), rv: j.live.GetResourceVersion(), hash: j.hash, fields: fields}
			raw = append(raw, fields...)
			return nil
		})
	}
	_ = g.Wait() // the functions report through errs
	if st.diffs == nil {
		st.diffs = map[object.Ref]cachedDiff{}
	}
	for ref, c := range fresh {
		if prev, ok := st.diffs[ref]; ok && prev.hash != c.hash {
			st.guard.Reset(ref) // a person changed the manifest: the war count starts over
		}
		st.diffs[ref] = c
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("diffing app %s: %w", p.app.Name, err)
	}
	out := diff.Without(raw, p.app.Ignore)
	diff.Sort(out)
	drifted := map[object.Ref]bool{}
	for _, d := range out {
		drifted[d.Object] = true
	}
	declared := make(map[object.Ref]bool, len(desired))
	for _, d := range desired {
		declared[object.RefOf(d)] = true
	}
	for ref := range live {
		if !drifted[ref] {
			st.guard.Settle(ref)
		}
	}
	for ref := range st.diffs {
		if !declared[ref] {
			delete(st.diffs, ref) // Git no longer declares it
		}
	}
	return out, nil
}
