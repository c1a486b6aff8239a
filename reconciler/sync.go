package reconciler

import (
	"context"
	"time"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/prune"
	"pinbot.dev/pinbot/reconciler/settle"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/reconciler/wave"
)

// sync applies the pass's desired objects wave by wave (see wave.Plan and
// applyWaves), prunes when mayPrune says so, records the sync and reports
// it: a pending commit status first, a failure naming the object if an
// apply, a wave or a deletion fails. A bad wave annotation, or a digest
// the signature policy refuses (verifySignatures), refuses the sync
// before anything is applied. On success the app awaits its
// verification, and p.live holds the objects as applied.
func (p *pass) sync(ctx context.Context) error {
	commit := p.o.Commit
	log := p.log.With("commit", shortSHA(commit))
	e := history.Entry{Commit: commit, Time: p.r.now(), Trigger: p.mode.trigger(), Result: history.Applied, Desired: desiredDigest(p.desired)}
	waves, err := wave.Plan(p.desired)
	if err != nil {
		e.Result, e.Reason, e.Final = history.Refused, err.Error(), true
		p.fail(ctx, &e, "refused: ")
		return err
	}
	// verifySignatures: nothing is applied unless every guarded digest
	// passes. A refusal is final for the commit; a registry that cannot
	// be read fails the sync, and the next pass asks again.
	if err := p.checkSignatures(ctx); err != nil {
		e.Result, e.Reason, e.Final = history.Failed, err.Error(), true
		prefix := "sync failed: "
		if refused(err) {
			e.Result, prefix = history.Refused, "refused: "
		}
		p.fail(ctx, &e, prefix)
		return err
	}
	p.post(ctx, &e, commitstatus.Pending, "syncing "+shortSHA(commit), "the sync")
	p.supersede(ctx, commit)
	applied, err := p.applyWaves(ctx, waves)
	e.Applied = len(applied)
	if err == nil && p.mayPrune() {
		var plan prune.Orphans
		plan, e.Pruned, err = p.pruneOrphans(ctx)
		if len(e.Pruned) > 0 || len(plan.Keep) > 0 {
			log.Info("pruned", "deleted", len(e.Pruned), "kept", len(plan.Keep))
		}
	}
	if err != nil {
		e.Result, e.Reason, e.Final = history.Failed, err.Error(), true
		if ctx.Err() != nil {
			// Cut off (a shutdown's timeout): say so on the commit and in
			// the history; a Failed entry is applied again by the next
			// pass, on whichever replica leads then.
			e.Reason = "interrupted before the sync finished (pinbot shut down): " + e.Reason
			rctx, cancel := recordContext(ctx)
			defer cancel()
			ctx = rctx
		}
		p.fail(ctx, &e, "sync failed: ")
		return err
	}
	log.Info("applied", "objects", len(applied), "waves", len(waves))
	p.appliedClean(applied)
	p.r.metrics.CountSync(p.app.Name, history.Applied)
	p.txn.Add(e)
	p.st.awaiting.Store(true)
	p.synced = true
	// A direct read, not the watch caches: they may not have seen the
	// apply yet, and an object cached from before it (the old config
	// hash) would call the app OutOfSync right after syncing it.
	p.live, err = p.c.Applier.Live(ctx, p.app.Name, p.desired)
	return err
}

// fail reports e, a sync that failed or was refused, as a failure on its
// commit (the description starts with prefix) and records it.
func (p *pass) fail(ctx context.Context, e *history.Entry, prefix string) {
	p.r.metrics.CountSync(p.app.Name, e.Result)
	p.post(ctx, e, commitstatus.Failure, prefix+e.Reason, "the failed sync")
	p.txn.Add(*e)
}

// post sets the commit status state (described by desc) on e's commit
// and, once it is posted, says so in e.Reported. A failure is logged as
// "reporting <what>" and the pass goes on: the next state posted replaces
// it.
func (p *pass) post(ctx context.Context, e *history.Entry, state commitstatus.State, desc, what string) {
	if err := p.r.report.Status(ctx, p.app.Name, p.repo(), e.Commit, state, desc); err != nil {
		p.log.Warn("reporting "+what, "error", err)
		return
	}
	if p.r.report != nil {
		e.Reported = state
	}
}

// comment posts v on the promotion pull request that commit merged, and
// reports whether the proof is commented (or there is nothing to comment
// on).
func (p *pass) comment(ctx context.Context, commit string, v *verdict.Verification) bool {
	ok, err := p.r.report.Comment(ctx, p.repo(), commit, v)
	if err != nil {
		p.log.Warn("commenting the verification", "error", err)
	}
	return ok || err == nil
}

// repo is the repository the pass reports to: the app's, or for a
// verify-only app the one its deployer follows.
func (p *pass) repo() string {
	if p.tracked != nil {
		return p.tracked.Repo
	}
	return p.app.Repo
}

// mayPrune decides whether this sync prunes: the app's policy asks for
// it, or this is `pinbot sync --prune`; and the commit was fetched by this
// very pass, from a reachable source. pinbot never prunes on state it
// cannot verify, so a follow-up pass, which reuses the last render, never
// prunes.
func (p *pass) mayPrune() bool {
	switch {
	case p.mode != modeLoop && p.mode != modeSync:
		return false
	case !p.app.SyncPolicy.Prune && !(p.mode == modeSync && p.prune):
		return false
	}
	return p.st.sourceVerified(p.o.Commit)
}

// supersede settles the latest sync if it still awaits verification and
// is of another commit than by: by replaced it before it was verified (a
// new sync, or a new head of a branch the app does not sync itself). Its
// commit status turns to error; one last seen failing to roll out says
// so, with what was seen.
func (p *pass) supersede(ctx context.Context, by string) {
	l := p.txn.Current().Latest()
	if l == nil || l.Result != history.Applied || l.Final || l.Commit == by {
		return
	}
	e := settle.Superseded(*l, shortSHA(by))
	p.post(ctx, &e, commitstatus.Error, e.Summary, "the superseded sync")
	p.txn.Replace(e)
}

// observe computes health and verification of the desired objects from
// the informer caches of the app's namespaces and the live objects. Hooks
// are left out: they count in the sync that runs them (their wave must
// complete), not afterwards, when a completed hook Job may have been
// deleted by its TTL.
func (p *pass) observe(ctx context.Context) (*verdict.Verification, verdict.HealthReport, error) {
	p.setWorkloads(p.desired)
	snap, err := p.r.snapshotOn(ctx, p.c, p.app.Name, p.app.AllowNamespaces, hook.Without(p.desired), p.live)
	if err != nil {
		return nil, verdict.HealthReport{}, p.c.Fault(err)
	}
	p.snap = snap
	return p.r.proveOn(ctx, p.c, p.app.Name, p.o.Commit, snap, p.st.lookAgain), verdict.AssessHealth(snap), nil
}

// conclude settles the sync awaiting verification, if it is for the commit
// just verified, reports the outcome to the forge, and records the entry
// and the status. A sync of an older commit that never settled is marked
// superseded.
func (p *pass) conclude(ctx context.Context, v *verdict.Verification, h verdict.HealthReport) {
	s := status.Of(p.o)
	l := p.txn.Current().Latest()
	awaiting := false
	switch {
	case l == nil || l.Result != history.Applied || l.Final:
	case l.Commit != s.Commit:
		p.supersede(ctx, s.Commit)
	default:
		out := settle.Sync(*l, v, h, p.r.now(), time.Duration(p.app.VerifyTimeout))
		e := out.Entry
		if out.State != "" {
			p.post(ctx, &e, out.State, out.Desc, "the verification")
		}
		if out.Comment {
			e.Commented = p.comment(ctx, e.Commit, v)
		}
		if e.Verified && !l.Verified {
			p.log.Info("verified", "commit", shortSHA(e.Commit), "summary", e.Summary)
		}
		awaiting = !e.Final
		p.txn.Replace(e)
	}
	p.st.awaiting.Store(awaiting)
	p.txn.SetStatus(s)
}

// persist stores s as app's status when it changed, in a write of its
// own. Failures are logged: the status is also returned to the caller.
func (r *Reconciler) persist(ctx context.Context, app string, s *status.App) {
	txn, err := r.history.Begin(ctx, app)
	if err == nil {
		txn.SetStatus(s)
		err = txn.Commit(ctx)
	}
	if err != nil {
		logctx.From(ctx).Warn("persisting the status", "app", app, "error", err)
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

// shortSHA is a commit as people read it.
func shortSHA(s string) string { return commitid.Short(s) }
