package reconciler

import (
	"context"
	"errors"
	"fmt"
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
	st.remember(s)
	return s, v, err
}

func (r *Reconciler) passOnce(ctx context.Context, app *App, st *appState, mode passMode) (*AppStatus, *Verification, error) {
	s := &AppStatus{
		App: app.Name, Repo: redact.URL(app.Repo), Branch: app.Branch, Path: app.Path,
		Automated: app.SyncPolicy.Automated, ObservedAt: r.now(), Sync: SyncUnknown, Health: HealthUnknown,
	}
	st.mu.Lock()
	commit, desired := st.commit, st.desired
	st.mu.Unlock()
	if mode != modeFollow || desired == nil {
		var err error
		commit, desired, err = r.load(ctx, app, st)
		if err != nil {
			return r.stopped(ctx, app, st, mode, s, commit, err)
		}
	}
	s.Commit = commit

	live, err := r.live(ctx, app, desired)
	if err != nil {
		return r.clusterFault(st, s, "reading the cluster", err)
	}
	// The pass reads the app's record once and writes it once, at its
	// end, whatever it synced, healed or settled.
	txn, err := r.history.begin(ctx, app.Name)
	if err != nil {
		if mode.records() {
			return r.clusterFault(st, s, "", err)
		}
		logctx.From(ctx).Debug("no history", "app", app.Name, "error", err)
		txn = r.history.emptyTxn(app.Name)
	}
	st.clusterUp()
	v, err := r.passWith(ctx, app, st, mode, s, txn, commit, desired, live)
	if mode.records() {
		if cerr := txn.commit(ctx); cerr != nil && err == nil {
			err = cerr
		} else if cerr != nil {
			logctx.From(ctx).Warn("recording the pass", "app", app.Name, "error", cerr)
		}
	}
	return s, v, err
}

// passWith is the part of a pass after Git and the cluster were read:
// sync, compare, diff and heal, verify, and settle. It changes the app's
// record in txn only; the caller writes it.
func (r *Reconciler) passWith(ctx context.Context, app *App, st *appState, mode passMode, s *AppStatus, txn *recordTxn,
	commit string, desired []*unstructured.Unstructured, live map[ObjectRef]*unstructured.Unstructured) (*Verification, error) {
	synced := false
	if r.shouldApply(app, mode, txn.rec, commit) {
		var err error
		if live, err = r.sync(ctx, app, st, mode, txn, commit, desired); err != nil {
			s.Error = err.Error()
			txn.setStatus(s)
			return nil, err
		}
		synced = true
	}
	var err error
	s.Sync, s.OutOfSync, err = Compare(app.Name, desired, live)
	if err != nil {
		return nil, err
	}
	live, derr := r.inspect(ctx, app, st, mode, s, txn, commit, desired, live, synced)
	if derr != nil && isTransient(derr) {
		_, _, err := r.clusterFault(st, s, "diffing", derr)
		return nil, err
	}
	s.SyncedCommit = syncedCommit(txn.rec)

	v, h, err := r.observe(ctx, app, commit, desired, live)
	if err != nil {
		s.Error = err.Error()
		return nil, err
	}
	s.Health, s.HealthReason, s.Objects = h.Health, h.Reason, h.Objects
	if war := st.war(); war != "" {
		s.Health, s.HealthReason = Degraded, war
	}
	s.Verified, s.Verification = v.Verified, v.Summary()
	if derr != nil {
		s.Error = derr.Error()
	}
	if mode.records() {
		r.conclude(ctx, app, st, s, v, h, txn)
	}
	return v, derr
}

// load fetches app's branch, renders it and places the objects. On
// success it remembers the render for follow-up passes.
func (r *Reconciler) load(ctx context.Context, app *App, st *appState) (string, []*unstructured.Unstructured, error) {
	var commit string
	var desired []*unstructured.Unstructured
	auth, err := r.auth(app)
	if err == nil {
		err = r.source.With(ctx, app, auth, func(rev Revision) error {
			commit = rev.Commit
			objs, err := render.Dir(rev.Dir, app.Path)
			if err != nil {
				return err
			}
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
func (r *Reconciler) stopped(ctx context.Context, app *App, st *appState, mode passMode, s *AppStatus, commit string, err error) (*AppStatus, *Verification, error) {
	s.Commit = commit
	var se *SourceError
	if errors.As(err, &se) {
		st.mu.Lock()
		down := st.sourceDown
		st.mu.Unlock()
		s.SourceUnreachableSince = &down
		s.Error = fmt.Sprintf("source unreachable since %s: %s", since(down), err)
		r.frozenDrift(ctx, app, st, s)
		if mode.records() {
			r.persist(ctx, app, s)
		}
		return s, nil, err
	}
	if isTransient(err) {
		return r.clusterFault(st, s, "", err)
	}
	s.Error = err.Error()
	degradeEmpty(s, err) // an empty render is refused and makes the app Degraded
	if !mode.records() {
		return s, nil, err
	}
	txn, herr := r.history.begin(ctx, app.Name)
	if herr != nil {
		return s, nil, err
	}
	s.SyncedCommit = syncedCommit(txn.rec)
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

// clusterFault stops a pass on a Kubernetes API error. A transient one
// (the API unreachable, overloaded or timing out) is dated: the status
// says since when, and the loop backs off and retries.
func (r *Reconciler) clusterFault(st *appState, s *AppStatus, what string, err error) (*AppStatus, *Verification, error) {
	msg := err.Error()
	if what != "" {
		msg = what + ": " + msg
	}
	if isTransient(err) {
		down := st.clusterDownSince(r.now())
		s.ClusterUnreachableSince = &down
		msg = fmt.Sprintf("kubernetes API unreachable since %s: %s", since(down), msg)
	}
	s.Error = msg
	return s, nil, err
}
