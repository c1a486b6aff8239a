package reconciler

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/logctx"
)

// sync applies desired (the placed render of commit) wave by wave (see
// PlanWaves and applyWaves), prunes when mayPrune says so, records the
// sync and reports it: a pending commit status first, a failure naming
// the object if an apply, a wave or a deletion fails. A bad wave
// annotation refuses the sync before anything is applied. On success the
// app awaits its verification, and sync returns the live objects as
// applied.
func (r *Reconciler) sync(ctx context.Context, app *App, st *appState, mode passMode, commit string, desired []*unstructured.Unstructured) (map[ObjectRef]*unstructured.Unstructured, error) {
	log := logctx.From(ctx).With("app", app.Name, "commit", shortSHA(commit))
	e := Entry{Commit: commit, Time: r.now(), Trigger: trigger(mode), Result: Applied}
	waves, err := PlanWaves(desired)
	if err != nil {
		e.Result, e.Reason, e.Final = Refused, err.Error(), true
		r.fail(ctx, app, &e, "refused: ")
		return nil, err
	}
	if err := r.report.status(ctx, app, commit, statePending, "syncing "+shortSHA(commit)); err != nil {
		log.Warn("reporting the sync", "err", err)
	} else if r.report != nil {
		e.Reported = statePending
	}
	r.supersede(ctx, app, commit)
	applied, err := r.applyWaves(ctx, app, waves)
	e.Applied = len(applied)
	if err == nil && r.mayPrune(ctx, app, st, mode, commit) {
		var plan PrunePlan
		plan, e.Pruned, err = r.prune(ctx, app, desired)
		if len(e.Pruned) > 0 || len(plan.Keep) > 0 {
			log.Info("pruned", "deleted", len(e.Pruned), "kept", len(plan.Keep))
		}
	}
	if err != nil {
		e.Result, e.Reason, e.Final = Failed, err.Error(), true
		r.fail(ctx, app, &e, "sync failed: ")
		return nil, err
	}
	log.Info("applied", "objects", len(applied), "waves", len(waves))
	r.metrics.countSync(app.Name, Applied)
	if err := r.record(ctx, app, e); err != nil {
		return nil, err
	}
	st.mu.Lock()
	st.awaiting = true
	st.mu.Unlock()
	// A direct read, not the watch caches: they may not have seen the
	// apply yet, and an object cached from before it (the old config
	// hash) would call the app OutOfSync right after syncing it.
	return r.applier.Live(ctx, app.Name, desired)
}

// fail reports e, a sync that failed or was refused, as a failure on its
// commit (the description starts with prefix) and records it.
func (r *Reconciler) fail(ctx context.Context, app *App, e *Entry, prefix string) {
	r.metrics.countSync(app.Name, e.Result)
	if err := r.report.status(ctx, app, e.Commit, stateFailure, prefix+e.Reason); err != nil {
		logctx.From(ctx).Warn("reporting the failed sync", "app", app.Name, "err", err)
	} else if r.report != nil {
		e.Reported = stateFailure
	}
	if err := r.record(ctx, app, *e); err != nil {
		logctx.From(ctx).Warn("recording the failed sync", "app", app.Name, "err", err)
	}
}

// mayPrune decides whether this sync prunes: the app's policy asks for
// it, or this is `pinbot sync --prune` (see SyncPrune); and the commit was
// fetched by this very pass, from a reachable source. pinbot never prunes
// on state it cannot verify, so a follow-up pass, which reuses the last
// render, never prunes.
func (r *Reconciler) mayPrune(ctx context.Context, app *App, st *appState, mode passMode, commit string) bool {
	switch {
	case mode != modeLoop && mode != modeSync:
		return false
	case !app.SyncPolicy.Prune && !(mode == modeSync && syncOptionsFrom(ctx).prune):
		return false
	}
	return st.sourceVerified(commit)
}

// SyncOption changes one call of Reconciler.Sync or Reconciler.DryRun.
type SyncOption func(*syncOptions)

type syncOptions struct {
	prune bool
}

// SyncPrune prunes in this sync even when the app's policy has prune off,
// as `pinbot sync --prune` does. The guards still hold (see PlanPrune).
func SyncPrune() SyncOption { return func(o *syncOptions) { o.prune = true } }

type syncOptionsKey struct{}

// withSyncOptions carries one Sync call's options down to sync through
// ctx: they belong to this request only, and a concurrent loop pass of
// the same app must not see them.
func withSyncOptions(ctx context.Context, opts []SyncOption) context.Context {
	if len(opts) == 0 {
		return ctx
	}
	o := syncOptionsFrom(ctx)
	for _, opt := range opts {
		opt(&o)
	}
	return context.WithValue(ctx, syncOptionsKey{}, o)
}

func syncOptionsFrom(ctx context.Context) syncOptions {
	o, _ := ctx.Value(syncOptionsKey{}).(syncOptions)
	return o
}

// supersede settles the previous sync if it still awaits verification and
// is of another commit: a new sync replaces it before it was verified. Its
// commit status turns to error.
func (r *Reconciler) supersede(ctx context.Context, app *App, commit string) {
	rec, err := r.history.Get(ctx, app.Name)
	if err != nil {
		return
	}
	l := rec.latest()
	if l == nil || l.Result != Applied || l.Final || l.Commit == commit {
		return
	}
	e := *l
	e.Final, e.Summary = true, "superseded by "+shortSHA(commit)+" before it was verified"
	if err := r.report.status(ctx, app, e.Commit, stateError, e.Summary); err != nil {
		logctx.From(ctx).Warn("reporting the superseded sync", "app", app.Name, "err", err)
	} else if r.report != nil {
		e.Reported = stateError
	}
	if err := r.history.Update(ctx, app.Name, func(cur *Record) bool {
		c := cur.latest()
		if c == nil || c.Commit != e.Commit || !c.Time.Equal(e.Time) {
			return false
		}
		cur.Entries[0] = e
		return true
	}); err != nil {
		logctx.From(ctx).Warn("recording the superseded sync", "app", app.Name, "err", err)
	}
}

// record adds e to app's history. A failed or refused entry for the same
// commit is replaced rather than repeated, so a retried sync does not push
// the other syncs out.
func (r *Reconciler) record(ctx context.Context, app *App, e Entry) error {
	return r.history.Update(ctx, app.Name, func(rec *Record) bool {
		if l := rec.latest(); l != nil && l.Commit == e.Commit && l.Result != Applied {
			rec.Entries[0] = e
			return true
		}
		rec.add(e)
		return true
	})
}

// observe computes health and verification of desired from the informer
// caches of app's namespaces and the live objects.
func (r *Reconciler) observe(ctx context.Context, app *App, commit string, desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) (*Verification, HealthReport, error) {
	if err := r.watcher.Watch(ctx, app.AllowNamespaces); err != nil {
		return nil, HealthReport{}, err
	}
	snap := &Snapshot{Desired: desired, Live: live}
	r.watcher.Fill(snap, app.AllowNamespaces)
	snap.Lookups = r.lookups.answer(ctx, Needs(snap))
	return Verify(app.Name, commit, snap), AssessHealth(snap), nil
}

// conclude settles the sync awaiting verification, if it is for the commit
// just verified, reports the outcome to the forge, and persists the entry
// and the status. A sync of an older commit that never settled is marked
// superseded.
func (r *Reconciler) conclude(ctx context.Context, app *App, st *appState, s *AppStatus, v *Verification, h HealthReport, rec *Record) error {
	log := logctx.From(ctx).With("app", app.Name)
	l := rec.latest()
	var update *Entry
	awaiting := false
	switch {
	case l == nil || l.Result != Applied || l.Final:
	case l.Commit != s.Commit:
		e := *l
		e.Final, e.Summary = true, "superseded by "+shortSHA(s.Commit)+" before it was verified"
		if err := r.report.status(ctx, app, e.Commit, stateError, e.Summary); err != nil {
			log.Warn("reporting the superseded sync", "err", err)
		}
		update = &e
	default:
		se := settle(*l, v, h, r.now(), time.Duration(app.VerifyTimeout))
		e := se.entry
		if se.state != "" {
			if err := r.report.status(ctx, app, e.Commit, se.state, se.desc); err != nil {
				log.Warn("reporting the verification", "err", err)
			} else if r.report != nil {
				e.Reported = se.state
			}
		}
		if se.comment {
			ok, err := r.report.comment(ctx, app, e.Commit, v)
			if err != nil {
				log.Warn("commenting the verification", "err", err)
			}
			e.Commented = ok || err == nil // nothing to comment on counts as done
		}
		if e.Verified && !l.Verified {
			log.Info("verified", "commit", shortSHA(e.Commit), "summary", e.Summary)
		}
		awaiting = !e.Final
		update = &e
	}
	st.mu.Lock()
	st.awaiting = awaiting
	st.mu.Unlock()
	return r.history.Update(ctx, app.Name, func(cur *Record) bool {
		changed := false
		if c := cur.latest(); update != nil && c != nil && c.Commit == update.Commit && c.Time.Equal(update.Time) && !sameEntry(*c, *update) {
			cur.Entries[0] = *update
			changed = true
		}
		if !s.sameAs(cur.Status) {
			cur.Status = withoutObjects(s)
			changed = true
		}
		return changed
	})
}

// persist stores s as app's status when it changed. Failures are logged:
// the status is also returned to the caller.
func (r *Reconciler) persist(ctx context.Context, app *App, s *AppStatus) {
	err := r.history.Update(ctx, app.Name, func(cur *Record) bool {
		if s.sameAs(cur.Status) {
			return false
		}
		cur.Status = withoutObjects(s)
		return true
	})
	if err != nil {
		logctx.From(ctx).Warn("persisting the status", "app", app.Name, "err", err)
	}
}

func withoutObjects(s *AppStatus) *AppStatus {
	c := *s
	c.Objects = nil
	return &c
}

func sameEntry(a, b Entry) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
