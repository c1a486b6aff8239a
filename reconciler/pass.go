package reconciler

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/render"
)

// passMode says what a pass may do besides computing the status.
type passMode int

const (
	// modeObserve computes only: pinbot status and pinbot verify.
	modeObserve passMode = iota
	// modeLoop is the loop's pass: it applies a new commit when the app is
	// automated, records and reports.
	modeLoop
	// modeSync is pinbot sync: apply the current commit now, record, report.
	modeSync
	// modeFollow recomputes health and verification from the last render
	// without fetching Git: the app's Pods changed during a rollout.
	modeFollow
	// modeReport is pinbot verify --report of a verify-only app: compute,
	// record and report, apply nothing.
	modeReport
)

func (m passMode) records() bool { return m != modeObserve }

// errEmpty refuses a render without objects.
var errEmpty = errors.New("the render holds no objects (set syncPolicy.allowEmpty to accept that)")

// pass is one reconciliation of app: fetch and render Git (except when
// following a rollout), compare with the cluster, apply when mode and
// policy say so, then compute health and verification, and (except when
// observing) record and report. The error says why the pass stopped early;
// the status says it too.
func (r *Reconciler) pass(ctx context.Context, app *App, st *appState, mode passMode) (*AppStatus, *Verification, error) {
	s, v, err := r.passOnce(ctx, app, st, mode)
	st.remember(s, v)
	return s, v, err
}

func (r *Reconciler) passOnce(ctx context.Context, app *App, st *appState, mode passMode) (*AppStatus, *Verification, error) {
	if app.VerifyOnly() {
		return r.passVerifyOnly(ctx, app, st, mode)
	}
	o := observation{app: app, at: r.now()}
	st.mu.Lock()
	commit, desired := st.commit, st.desired
	st.mu.Unlock()
	if mode != modeFollow || desired == nil {
		var err error
		commit, desired, err = r.load(ctx, app, st)
		if err != nil {
			return r.stopped(ctx, app, st, mode, &o, commit, err)
		}
	}
	o.commit = commit

	live, err := r.live(ctx, app, desired)
	if err != nil {
		return r.clusterFault(st, &o, "reading the cluster", err)
	}
	// The pass reads the app's record once and writes it once, at its
	// end, whatever it synced, healed or settled.
	txn, err := r.history.begin(ctx, app.Name)
	if err != nil {
		if mode.records() {
			return r.clusterFault(st, &o, "", err)
		}
		logctx.From(ctx).Debug("no history", "app", app.Name, "error", err)
		txn = r.history.emptyTxn(app.Name)
	}
	st.clusterUp()
	v, err := r.passWith(ctx, app, st, mode, &o, txn, desired, live)
	if mode.records() {
		rctx, cancel := recordContext(ctx)
		defer cancel()
		if cerr := txn.commit(rctx); cerr != nil && err == nil {
			err = cerr
		} else if cerr != nil {
			logctx.From(ctx).Warn("recording the pass", "app", app.Name, "error", cerr)
		}
	}
	return statusOf(o), v, err
}

// passWith is the part of a pass after Git and the cluster were read:
// sync, compare, diff and heal, verify, and settle. It notes what it finds
// in o, and changes the app's record in txn only; the caller writes it.
func (r *Reconciler) passWith(ctx context.Context, app *App, st *appState, mode passMode, o *observation, txn *recordTxn,
	desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) (*Verification, error) {
	commit := o.commit
	synced := false
	if r.shouldApply(app, mode, txn.rec, commit) {
		var err error
		if live, err = r.sync(ctx, app, st, mode, txn, commit, desired); err != nil {
			o.err = err
			txn.setStatus(statusOf(*o))
			return nil, err
		}
		synced = true
	}
	var err error
	if o.sync, o.outOfSync, err = Compare(app.Name, desired, live); err != nil {
		o.err = err
		return nil, err
	}
	o.compared = true
	live, derr := r.inspect(ctx, app, st, mode, o, txn, desired, live, synced)
	if derr != nil && isTransient(derr) {
		_, _, err := r.clusterFault(st, o, "diffing", derr)
		return nil, err
	}
	o.err = derr
	o.syncedCommit = syncedCommit(txn.rec)

	v, h, err := r.observe(ctx, app, commit, desired, live)
	if err != nil {
		o.err = err
		return nil, err
	}
	o.health, o.war, o.verification = &h, st.war(), v
	if mode.records() {
		r.conclude(ctx, app, st, statusOf(*o), v, h, txn)
	}
	return v, derr
}

// load fetches app's branch, renders it and places the objects. On
// success it remembers the render for follow-up passes.
func (r *Reconciler) load(ctx context.Context, app *App, st *appState) (string, []*unstructured.Unstructured, error) {
	if app.VerifyOnly() {
		return "", nil, verifyOnlyError(app)
	}
	var commit string
	var desired []*unstructured.Unstructured
	auth, err := r.auth(app)
	if err == nil {
		err = r.source.With(ctx, app, auth, func(rev Revision) error {
			commit = rev.Commit
			objs, err := r.render(rev.Dir, app.Path, app.renderOptions()...)
			if err != nil {
				return err
			}
			objs = applicable(objs)
			if len(objs) == 0 && !app.SyncPolicy.AllowEmpty {
				return &render.Error{File: app.Path, Err: errEmpty}
			}
			desired, err = Place(app, objs, r.applier.Scope)
			return err
		})
	} else {
		err = &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var se *SourceError
	if errors.As(err, &se) {
		if st.sourceDown.IsZero() {
			st.sourceDown = r.now()
		}
		return commit, nil, err
	}
	st.sourceDown = time.Time{}
	if err != nil {
		return commit, nil, err
	}
	st.commit, st.desired = commit, desired
	return commit, desired, nil
}

// stopped finishes a pass that could not render: it says why in the status
// and, for a refused commit the loop or a person tried to sync, records the
// refusal and reports it on the commit.
func (r *Reconciler) stopped(ctx context.Context, app *App, st *appState, mode passMode, o *observation, commit string, err error) (*AppStatus, *Verification, error) {
	o.commit, o.err = commit, err
	var se *SourceError
	if errors.As(err, &se) {
		st.mu.Lock()
		o.sourceDown = st.sourceDown
		st.mu.Unlock()
		r.frozenDrift(ctx, app, st, o)
		s := statusOf(*o)
		if mode.records() {
			r.persist(ctx, app, s)
		}
		return s, nil, err
	}
	if isTransient(err) {
		return r.clusterFault(st, o, "", err)
	}
	if !mode.records() {
		return statusOf(*o), nil, err
	}
	txn, herr := r.history.begin(ctx, app.Name)
	if herr != nil {
		return statusOf(*o), nil, err
	}
	o.syncedCommit = syncedCommit(txn.rec)
	s := statusOf(*o)
	if mode == modeSync || r.shouldApply(app, mode, txn.rec, commit) {
		e := Entry{Commit: commit, Time: r.now(), Trigger: trigger(mode), Result: Refused, Reason: s.Error, Final: true}
		if l := txn.rec.latest(); l != nil && l.Commit == commit && l.Result == Refused && l.Reason == e.Reason {
			e = *l // already recorded and reported
		} else {
			r.post(ctx, app, &e, stateFailure, "refused: "+s.Error, "the refusal")
		}
		txn.record(e)
	}
	txn.setStatus(s)
	if cerr := txn.commit(ctx); cerr != nil {
		return s, nil, errors.Join(err, cerr)
	}
	return s, nil, err
}

// shouldApply decides whether this pass applies commit: pinbot sync always
// does; the loop does for an automated app when commit has no sync yet or
// its last sync failed. Drift on a synced commit is healed object by object
// instead (see mayHeal and inspect).
func (r *Reconciler) shouldApply(app *App, mode passMode, rec *Record, commit string) bool {
	switch {
	case mode == modeSync:
		return true
	case mode != modeLoop || !app.SyncPolicy.Automated:
		return false
	}
	l := rec.latest()
	return l == nil || l.Commit != commit || l.Result == Failed
}

func trigger(mode passMode) string {
	if mode == modeSync {
		return "manual"
	}
	return "auto"
}

// syncedCommit is the commit of the newest sync that applied everything.
func syncedCommit(rec *Record) string {
	for _, e := range rec.Entries {
		if e.Result == Applied {
			return e.Commit
		}
	}
	return ""
}

// clusterFault stops a pass on a Kubernetes API error in stage (or "" when
// err names it). A transient one (the API unreachable, overloaded or
// timing out) is dated: the status says since when, and the loop backs off
// and retries.
func (r *Reconciler) clusterFault(st *appState, o *observation, stage string, err error) (*AppStatus, *Verification, error) {
	o.err, o.stage = err, stage
	if isTransient(err) {
		o.clusterDown = st.clusterDownSince(r.now())
	}
	return statusOf(*o), nil, err
}
