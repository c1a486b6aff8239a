package reconciler

import (
	"context"
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
func (r *Reconciler) sync(ctx context.Context, app *App, st *appState, mode passMode, txn *recordTxn, commit string, desired []*unstructured.Unstructured) (map[ObjectRef]*unstructured.Unstructured, error) {
	log := logctx.From(ctx).With("app", app.Name, "commit", shortSHA(commit))
	e := Entry{Commit: commit, Time: r.now(), Trigger: trigger(mode), Result: Applied}
	waves, err := PlanWaves(desired)
	if err != nil {
		e.Result, e.Reason, e.Final = Refused, err.Error(), true
		r.fail(ctx, app, txn, &e, "refused: ")
		return nil, err
	}
	r.post(ctx, app, &e, statePending, "syncing "+shortSHA(commit), "the sync")
	r.supersede(ctx, app, txn, commit)
	applied, err := r.applyWaves(ctx, app, waves, mode == modeSync)
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
		if ctx.Err() != nil {
			// Cut off (a shutdown's timeout): say so on the commit and in
			// the history; a Failed entry is applied again by the next
			// pass, on whichever replica leads then.
			e.Reason = "interrupted before the sync finished (pinbot shut down): " + e.Reason
			rctx, cancel := recordContext(ctx)
			defer cancel()
			ctx = rctx
		}
		r.fail(ctx, app, txn, &e, "sync failed: ")
		return nil, err
	}
	log.Info("applied", "objects", len(applied), "waves", len(waves))
	r.metrics.countSync(app.Name, Applied)
	txn.record(e)
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
func (r *Reconciler) fail(ctx context.Context, app *App, txn *recordTxn, e *Entry, prefix string) {
	r.metrics.countSync(app.Name, e.Result)
	r.post(ctx, app, e, stateFailure, prefix+e.Reason, "the failed sync")
	txn.record(*e)
}

// post sets the commit status state (described by desc) on e's commit
// and, once it is posted, says so in e.Reported. A failure is logged as
// "reporting <what>" and the pass goes on: the next state posted replaces
// it.
func (r *Reconciler) post(ctx context.Context, app *App, e *Entry, state, desc, what string) {
	if err := r.report.status(ctx, app, e.Commit, state, desc); err != nil {
		logctx.From(ctx).Warn("reporting "+what, "app", app.Name, "error", err)
		return
	}
	if r.report != nil {
		e.Reported = state
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

// supersede settles the latest sync if it still awaits verification and
// is of another commit than by: by replaced it before it was verified (a
// new sync, or a new head of a branch the app does not sync itself). Its
// commit status turns to error.
func (r *Reconciler) supersede(ctx context.Context, app *App, txn *recordTxn, by string) {
	l := txn.rec.latest()
	if l == nil || l.Result != Applied || l.Final || l.Commit == by {
		return
	}
	e := *l
	e.Final, e.Summary = true, "superseded by "+shortSHA(by)+" before it was verified"
	r.post(ctx, app, &e, stateError, e.Summary, "the superseded sync")
	txn.replaceLatest(e)
}

// observe computes health and verification of desired from the informer
// caches of app's namespaces and the live objects. Hooks are left out:
// they count in the sync that runs them (their wave must complete), not
// afterwards, when a completed hook Job may have been deleted by its TTL.
func (r *Reconciler) observe(ctx context.Context, app *App, commit string, desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) (*Verification, HealthReport, error) {
	if err := r.watcher.Watch(ctx, app.AllowNamespaces); err != nil {
		return nil, HealthReport{}, err
	}
	snap := &Snapshot{Desired: withoutHooks(desired), Live: live}
	r.watcher.Fill(snap, app.AllowNamespaces)
	snap.Lookups = r.lookups.answer(ctx, Needs(snap))
	return Verify(app.Name, commit, snap), AssessHealth(snap), nil
}

// conclude settles the sync awaiting verification, if it is for the commit
// just verified, reports the outcome to the forge, and records the entry
// and the status in txn. A sync of an older commit that never settled is
// marked superseded.
func (r *Reconciler) conclude(ctx context.Context, app *App, st *appState, s *AppStatus, v *Verification, h HealthReport, txn *recordTxn) {
	log := logctx.From(ctx).With("app", app.Name)
	l := txn.rec.latest()
	awaiting := false
	switch {
	case l == nil || l.Result != Applied || l.Final:
	case l.Commit != s.Commit:
		r.supersede(ctx, app, txn, s.Commit)
	default:
		se := settle(*l, v, h, r.now(), time.Duration(app.VerifyTimeout))
		e := se.entry
		if se.state != "" {
			r.post(ctx, app, &e, se.state, se.desc, "the verification")
		}
		if se.comment {
			ok, err := r.report.comment(ctx, app, e.Commit, v)
			if err != nil {
				log.Warn("commenting the verification", "error", err)
			}
			e.Commented = ok || err == nil // nothing to comment on counts as done
		}
		if e.Verified && !l.Verified {
			log.Info("verified", "commit", shortSHA(e.Commit), "summary", e.Summary)
		}
		awaiting = !e.Final
		txn.replaceLatest(e)
	}
	st.mu.Lock()
	st.awaiting = awaiting
	st.mu.Unlock()
	txn.setStatus(s)
}

// persist stores s as app's status when it changed, in a write of its
// own. Failures are logged: the status is also returned to the caller.
func (r *Reconciler) persist(ctx context.Context, app *App, s *AppStatus) {
	txn, err := r.history.begin(ctx, app.Name)
	if err == nil {
		txn.setStatus(s)
		err = txn.commit(ctx)
	}
	if err != nil {
		logctx.From(ctx).Warn("persisting the status", "app", app.Name, "error", err)
	}
}

// recordTimeout bounds recording a pass whose context ended.
const recordTimeout = 10 * time.Second

// recordContext is ctx for writing what a pass did: once ctx has ended (a
// shutdown cut the pass off), a context of its own bounded by
// recordTimeout, so the history still says what happened.
func recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}
