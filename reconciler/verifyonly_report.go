package reconciler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
)

// reportObserved records v as the entry of its head commit and posts what
// it means there (observedReport), once per change of state.
func (r *Reconciler) reportObserved(ctx context.Context, tracked *App, mode passMode, v *Verification, txn *recordTxn) {
	trig := "auto"
	if mode == modeReport {
		trig = TriggerVerify
	}
	e := Entry{Commit: v.Commit, Time: r.now(), Trigger: trig, Result: Observed}
	existing := false
	if l := txn.rec.latest(); l != nil && l.Commit == v.Commit && l.Result == Observed {
		e, existing = *l, true
	}
	se := observedReport(e, v, r.now())
	e = se.entry
	if se.state != "" {
		r.post(ctx, tracked, &e, se.state, se.desc, "the verification")
	}
	if se.comment {
		ok, err := r.report.comment(ctx, tracked, e.Commit, v)
		if err != nil {
			logctx.From(ctx).Warn("commenting the verification", "app", tracked.Name, "error", err)
		}
		e.Commented = ok || err == nil // nothing to comment on counts as done
	}
	if existing {
		txn.replaceLatest(e)
	} else {
		txn.record(e)
	}
}

// observedReport decides, purely, what a verify-only app's verification v
// means for e, the entry of its head commit, at now: success with the
// summary when verified (and, once, the comment on the promotion pull
// request); failure when a container runs neither the head's nor the
// deployed revision's digest; else pending (the deployer is behind, or
// Pods are starting). A state already posted is not posted again, and a
// head once verified is not set back to pending by a Pod restarting.
func observedReport(e Entry, v *Verification, now time.Time) settlement {
	e.Summary = v.Summary()
	s := settlement{}
	mismatch := slices.ContainsFunc(v.Containers, func(c ContainerVerdict) bool { return c.Verdict == Mismatch })
	switch {
	case v.Verified:
		if !e.Verified {
			t := now
			e.VerifiedAt = &t
		}
		e.Verified, e.Digests = true, digestCounts(v)
		s.state, s.desc = stateSuccess, e.Summary
		s.comment = !e.Commented
	case mismatch:
		e.Verified = false
		s.state, s.desc = stateFailure, e.Summary
	default:
		s.state, s.desc = statePending, e.Summary
		if e.Reported == stateSuccess {
			s.state, s.desc = "", ""
		}
	}
	if s.state == e.Reported {
		s.state, s.desc = "", ""
	}
	s.entry = e
	return s
}

// Report verifies a verify-only app as Status does, records the result and
// reports it on the head commit: the commit status pinbot/<app> pending
// while the deployer is behind, success when verified (with the per-Pod
// proof on the merged promotion pull request), failure on a mismatch.
// What was already posted for the head is not posted again.
func (r *Reconciler) Report(ctx context.Context, name string) (*AppStatus, *Verification, error) {
	a, st, err := r.app(name)
	switch {
	case err != nil:
		return nil, nil, err
	case !a.VerifyOnly():
		return nil, nil, fmt.Errorf("app %s: pinbot reports its own apps as it syncs them; --report is for apps Argo CD or Flux deploy", name)
	case r.report == nil:
		return nil, nil, fmt.Errorf("%s: reporting needs the forge section (forge.url)", r.cfg.file)
	}
	if err := r.Check(ctx); err != nil {
		return nil, nil, err
	}
	return r.pass(ctx, a, st, modeReport)
}
