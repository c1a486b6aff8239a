package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/logctx"
)

// inspect adds the app's drift and orphans to s, and heals when mayHeal
// says so. A pass that just synced has no drift (it applied Git); a
// follow-up pass (no Git fetch) reports the last pass's findings. It
// returns live as a heal left it; a heal is recorded in txn.
func (r *Reconciler) inspect(ctx context.Context, app *App, st *appState, mode passMode, s *AppStatus, txn *recordTxn, commit string,
	desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured, synced bool) (map[ObjectRef]*unstructured.Unstructured, error) {
	ds := &st.drift
	var drift []Drift
	var orphans []ObjectRef
	var err error
	if mode == modeFollow {
		ds.mu.Lock()
		drift, orphans = ds.last, ds.lastOrphans
		ds.mu.Unlock()
	} else {
		if !synced {
			drift, err = r.driftOf(ctx, app, st, desired, live)
		}
		var oerr error
		orphans, oerr = r.orphans(ctx, app, st, desired)
		err = errors.Join(err, oerr)
		if err == nil && (len(drift) > 0 || len(s.OutOfSync) > 0) && r.mayHeal(app, st, mode, txn.rec, commit) {
			healed, herr := r.heal(ctx, app, st, txn, commit, desired, live, drift, s.OutOfSync)
			if len(healed) > 0 {
				live, drift = withHealed(live, drift, healed)
				var cerr error
				if s.Sync, s.OutOfSync, cerr = Compare(app.Name, desired, live); cerr != nil {
					herr = errors.Join(herr, cerr)
				}
			}
			err = herr
		}
		ds.mu.Lock()
		ds.last, ds.lastOrphans = drift, orphans
		ds.mu.Unlock()
	}
	s.Drift, s.Orphaned = drift, orphans
	s.OutOfSync = appendRefs(s.OutOfSync, drift, orphans)
	if len(s.OutOfSync) > 0 {
		s.Sync = OutOfSync
	}
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

// frozenDrift fills s, a pass stopped because the source is unreachable,
// with the drift from the last commit fetched. It only reads and dry-runs:
// pinbot applies, heals and prunes nothing on state it cannot verify, but
// a person should still see that the cluster moved.
func (r *Reconciler) frozenDrift(ctx context.Context, app *App, st *appState, s *AppStatus) {
	st.mu.Lock()
	commit, desired := st.commit, st.desired
	st.mu.Unlock()
	if desired == nil {
		return
	}
	live, err := r.live(ctx, app, desired)
	if err == nil {
		s.Drift, err = r.driftOf(ctx, app, st, desired, live)
	}
	if err != nil {
		logctx.From(ctx).Debug("diffing the last commit while the source is unreachable", "app", app.Name, "error", err)
		return
	}
	s.Commit = commit
}

// clusterFault stops a pass on a Kubernetes API error. A transient one
// (the API unreachable, overloaded or timing out) is dated: the status
// says since when, and the loop backs off and retries.
func (r *Reconciler) clusterFault(st *appState, s *AppStatus, what string, err error) (*AppStatus, *Verification, error) {
	msg := err.Error()
	if what != "" {
		msg = what + ": " + msg
	}
	if isTransient(err) {
		down := st.drift.clusterDownSince(r.now())
		s.ClusterUnreachableSince = &down
		msg = fmt.Sprintf("kubernetes API unreachable since %s: %s", since(down), msg)
	}
	s.Error = msg
	return s, nil, err
}

// clusterDownSince records that the API stopped answering at now, unless
// it already had, and returns since when.
func (ds *driftState) clusterDownSince(now time.Time) time.Time {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.clusterDown.IsZero() {
		ds.clusterDown = now
	}
	return ds.clusterDown
}

// clusterUp records that the API answers.
func (ds *driftState) clusterUp() {
	ds.mu.Lock()
	ds.clusterDown = time.Time{}
	ds.mu.Unlock()
}

// war returns the drift-war message of the app, or "".
func (ds *driftState) war() string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.guard.war()
}
