package reconciler

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/logctx"
)

// inspect notes the app's drift and orphans in o, and heals when mayHeal
// says so. A pass that just synced has no drift (it applied Git); a
// follow-up pass (no Git fetch) reports the last pass's findings. It
// returns live as a heal left it (o then holds the comparison after the
// heal); a heal is recorded in txn.
func (r *Reconciler) inspect(ctx context.Context, app *App, st *appState, mode passMode, o *observation, txn *recordTxn,
	desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured, synced bool) (map[ObjectRef]*unstructured.Unstructured, error) {
	var drift []Drift
	var orphans []ObjectRef
	var err error
	if mode == modeFollow {
		st.mu.Lock()
		drift, orphans = st.lastDrift, st.lastOrphans
		st.mu.Unlock()
	} else {
		if !synced {
			drift, err = r.driftOf(ctx, app, st, desired, live)
		}
		var oerr error
		orphans, oerr = r.orphans(ctx, app, st, desired)
		err = errors.Join(err, oerr)
		if err == nil && (len(drift) > 0 || len(o.outOfSync) > 0) && r.mayHeal(app, st, mode, txn.rec, o.commit) {
			healed, herr := r.heal(ctx, app, st, txn, o.commit, desired, live, drift, o.outOfSync)
			if len(healed) > 0 {
				live, drift = withHealed(live, drift, healed)
				var cerr error
				if o.sync, o.outOfSync, cerr = Compare(app.Name, desired, live); cerr != nil {
					herr = errors.Join(herr, cerr)
				}
			}
			err = herr
		}
		st.mu.Lock()
		st.lastDrift, st.lastOrphans = drift, orphans
		st.mu.Unlock()
	}
	o.drift, o.orphans = drift, orphans
	return live, err
}

// withHealed returns live with the healed objects replaced, and drift
// without theirs.
func withHealed(live map[ObjectRef]*unstructured.Unstructured, drift []Drift, healed map[ObjectRef]*unstructured.Unstructured) (map[ObjectRef]*unstructured.Unstructured, []Drift) {
	out := make(map[ObjectRef]*unstructured.Unstructured, len(live)+len(healed))
	for ref, o := range live {
		out[ref] = o
	}
	for ref, o := range healed {
		out[ref] = o
	}
	var left []Drift
	for _, d := range drift {
		if healed[d.Object] == nil {
			left = append(left, d)
		}
	}
	return out, left
}

// appendRefs adds the objects of drift and orphans to refs, once each.
func appendRefs(refs []ObjectRef, drift []Drift, orphans []ObjectRef) []ObjectRef {
	seen := map[ObjectRef]bool{}
	for _, r := range refs {
		seen[r] = true
	}
	add := func(r ObjectRef) {
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	for _, d := range drift {
		add(d.Object)
	}
	for _, o := range orphans {
		add(o)
	}
	return refs
}

// frozenDrift notes in o, a pass stopped because the source is
// unreachable, the drift from the last commit fetched. It only reads and dry-runs:
// pinbot applies, heals and prunes nothing on state it cannot verify, but
// a person should still see that the cluster moved.
func (r *Reconciler) frozenDrift(ctx context.Context, app *App, st *appState, o *observation) {
	st.mu.Lock()
	commit, desired := st.commit, st.desired
	st.mu.Unlock()
	if desired == nil {
		return
	}
	live, err := r.live(ctx, app, desired)
	if err == nil {
		o.drift, err = r.driftOf(ctx, app, st, desired, live)
	}
	if err != nil {
		logctx.From(ctx).Debug("diffing the last commit while the source is unreachable", "app", app.Name, "error", err)
		return
	}
	o.commit = commit
}
