package release

import (
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
)

// watch judges a merged digest within the rollback window: a failed
// proof rolls back to the last digest proven before it and holds the
// failed one in env and below. held is a freeze window that holds
// rollbacks (Freeze.HoldRollbacks): the failure is acted on when it ends.
func (s stepper) watch(t *Track, env Environment, image string, obs Assessment, held bool) []Action {
	m := t.Merged
	if m == nil || m.Done || m.Digest != t.Pinned {
		return nil
	}
	age := s.now.Sub(m.At)
	failure := obs.Failure
	if failure == "" && !obs.Proven {
		since := m.At
		if m.Proved {
			if m.FailingSince == nil {
				f := s.now
				m.FailingSince = &f
			}
			since = *m.FailingSince
		}
		if s.now.Sub(since) >= env.ReadyTimeout {
			why := obs.Stuck()
			if why == "" {
				why = obs.Why
			}
			failure = fmt.Sprintf("not proven within %s of the merge (pinbot saw it merged at %s, deadline %s): %s", env.ReadyTimeout,
				stamp(m.At), stamp(m.At.Add(env.ReadyTimeout)), why)
			if m.Proved {
				failure = fmt.Sprintf("the proof broke for %s (broken since %s): %s", env.ReadyTimeout, stamp(since), why)
			}
		}
	}
	if failure == "" {
		if age > env.RollbackWindow {
			m.Done = true
		}
		return nil
	}
	if held {
		return nil // acted on when the window ends
	}
	m.Done, m.Failure = true, failure
	report := func(what string) []Action {
		s.l.event(s.now, env.Name, image, ReasonReported, what)
		return []Action{reportAction(env.Name, image, m.Digest, what)}
	}
	switch {
	case age > env.RollbackWindow:
		return report(fmt.Sprintf("%s failed after the rollback window (%s): reported, not rolled back: %s", imageref.Short(m.Digest), env.RollbackWindow, failure))
	case m.Rollback:
		return report(fmt.Sprintf("the rollback to %s failed to prove; pinbot does not roll back a rollback: %s", imageref.Short(m.Digest), failure))
	}
	return append(s.rollBack(t, env, image, m, "failed to prove", report), s.rollBackEarlier(env, image, m)...)
}

// rollBackEarlier rolls back, when env is a wave whose environment says
// so (RollbackEarlierWaves), the waves before it that pin m's digest
// too, as a failure there would.
func (s stepper) rollBackEarlier(env Environment, image string, m *Merge) []Action {
	if env.Of == "" || !env.RollbackEarlierWaves {
		return nil
	}
	var out []Action
	for _, e := range s.chain[:slices.IndexFunc(s.chain, func(e Environment) bool { return e.Name == env.Name })] {
		t := s.l.Lookup(e.Name, image)
		if e.Of != env.Of || t == nil || t.Pinned != m.Digest || t.Rollback != nil {
			continue
		}
		if t.Merged == nil || t.Merged.Digest != t.Pinned {
			t.Merged = &Merge{Digest: t.Pinned, At: s.now}
		}
		t.Merged.Done, t.Merged.Failure = true, fmt.Sprintf("wave %s failed: %s", env.Wave, m.Failure)
		out = append(out, s.rollBack(t, e, image, t.Merged, "failed in wave "+env.Wave, func(what string) []Action { s.l.event(s.now, e.Name, image, ReasonReported, what); return nil })...)
	}
	return out
}

// rollBack holds merge m's digest in env and after it and opens the
// rollback to the digest proven before it, for failure (m.Failure);
// report says it when nothing was proven before.
func (s stepper) rollBack(t *Track, env Environment, image string, m *Merge, failed string, report func(string) []Action) []Action {
	to, tag := rollbackTo(t, m)
	s.l.hold(s.chain.Below(env.Name), Hold{Image: image, Digest: m.Digest, Reason: m.Failure, Since: s.now, From: env.Name, RolledBackTo: to,
		Known: knownDigests(t)})
	if to == "" {
		return report(fmt.Sprintf("%s %s and is held; no digest was proven here before it, so there is nothing to roll back to: %s", imageref.Short(m.Digest), failed, m.Failure))
	}
	s.l.event(s.now, env.Name, image, ReasonHeld, fmt.Sprintf("%s %s and is held; rolling back to %s: %s", imageref.Short(m.Digest), failed, imageref.Short(to), m.Failure))
	// The decision goes into the ledger before the pull request exists.
	t.Rollback = &Proposal{Digest: to, Failed: m.Digest, Evidence: m.Failure, Tag: tag, At: m.At}
	if g, grouped := env.groupOf(image, s.images); grouped {
		return []Action{s.rollbackSet(env, g, image, t)}
	}
	return []Action{rollbackOf(env.Name, image, t.Rollback)}
}

// AskRollback records who asks to roll image in env back from the digest
// Git pins there to the one proven there before it, and why. The next
// step does what a failure there would: it holds the pinned digest in
// env and after it, and opens pinbot's rollback pull request. An error
// says why there is nothing to roll back.
func (l *Ledger) AskRollback(env, image, who, why string, now time.Time) error {
	t := l.Lookup(env, image)
	switch {
	case t == nil || t.Pinned == "":
		return fmt.Errorf("Git pins no %s in %s", image, env)
	case t.Rollback != nil || t.RollbackAsked != nil:
		return fmt.Errorf("a rollback of %s in %s is open or asked for already", image, env)
	}
	if to, _ := rollbackTo(t, &Merge{Digest: t.Pinned}); to == "" {
		return fmt.Errorf("nothing was proven in %s before %s: there is nothing to roll back to", env, imageref.Short(t.Pinned))
	}
	t.RollbackAsked = &Ask{By: who, Why: why, At: now}
	l.LogBy(now, env, image, ReasonRollbackAsked, fmt.Sprintf("%s asked to roll %s back from %s: %s", who, image, imageref.Short(t.Pinned), why), who, why)
	return nil
}

// asked opens the rollback a person asked for, unless a freeze window
// holds rollbacks (then when it ends).
func (s stepper) asked(t *Track, env Environment, image string, held bool) []Action {
	a := t.RollbackAsked
	if a == nil || held {
		return nil
	}
	t.RollbackAsked = nil
	if t.Rollback != nil || t.Pinned == "" {
		return nil
	}
	if t.Merged == nil || t.Merged.Digest != t.Pinned {
		t.Merged = &Merge{Digest: t.Pinned, At: a.At}
	}
	m := t.Merged
	m.Done, m.Failure = true, fmt.Sprintf("rolled back by %s: %s", a.By, a.Why)
	return s.rollBack(t, env, image, m, "is rolled back at "+a.By+"'s ask", func(what string) []Action {
		s.l.event(s.now, env.Name, image, ReasonReported, what)
		return nil
	})
}

// rollbackTo is the digest a failure of merge m rolls back to, the last
// one proven before it, and the tag it had when it was proven.
func rollbackTo(t *Track, m *Merge) (digest, tag string) {
	if t.LastProven == m.Digest {
		return t.PrevProven, t.PrevProvenTag
	}
	return t.LastProven, t.LastProvenTag
}

// readyRollback readies the rollback of a digest merged into env that is
// still not proven halfway through its readiness window (readyAt): its
// branch is pushed then, so that a failure at the deadline only has the
// pull request left to open. A release that proves sooner, as most do,
// costs no push. The branch goes once the digest proves or the ledger
// moves on; a rollback that opened keeps it.
func (s stepper) readyRollback(t *Track, env Environment, image string) []Action {
	if _, grouped := env.groupOf(image, s.images); grouped {
		return nil // a group's rollback is pushed when one fails
	}
	m, r := t.Merged, t.Readied
	switch {
	case r != nil && t.Rollback != nil && t.Rollback.Failed == r.Failed:
		t.Readied = nil // the rollback's pull request is on the branch
	case r != nil && (m == nil || m.Digest != r.Failed || m.Proved || m.Done):
		t.Readied = nil
		if r.Branch != "" {
			return []Action{dropAction(env.Name, image, r)}
		}
	case r == nil && m != nil && m.Digest == t.Pinned && !m.Done && !m.Proved && !m.Rollback && t.Rollback == nil && !s.now.Before(readyAt(m, env)):
		to, tag := rollbackTo(t, m)
		if to == "" {
			return nil
		}
		t.Readied = &Readied{Failed: m.Digest}
		return []Action{readyAction(env.Name, image, to, tag, m)}
	}
	return nil
}

// readyAt is when the rollback of merge m is readied: halfway through
// env's readiness window.
func readyAt(m *Merge, env Environment) time.Time { return m.At.Add(env.ReadyTimeout / 2) }

// settling reports whether the digest merged into n is still inside its
// readiness window, or failed and awaits its rollback: an onward pull
// request now would undo a release (a person's forced hotfix, say) before
// it had the chance to prove, or race the rollback.
func settling(n *Track, env *Environment, now time.Time) bool {
	m := n.Merged
	if m == nil || m.Digest != n.Pinned {
		return false
	}
	failedInWindow := m.Failure != "" && now.Before(m.At.Add(env.RollbackWindow))
	return failedInWindow || !m.Done && !m.Proved && now.Before(m.At.Add(env.ReadyTimeout))
}

// rollbackPull is what pinbot's open rollback pull request of image in
// env needs: pinbot's own pinbot/gate, which a branch protection requires
// (it restores a digest proven here before), and with rollback: auto its
// merge at the head pinbot pushed, unless a freeze window holds
// rollbacks.
func rollbackPull(t *Track, env Environment, image string, held bool) []Action {
	rb := t.Rollback
	if rb == nil || rb.PR == 0 || rb.Head == "" {
		return nil
	}
	var out []Action
	desc := "rolls back to " + imageref.Short(rb.Digest) + ", proven here before, from " + imageref.Short(rb.Failed)
	if rb.Gate == nil || rb.Gate.State != commitstatus.Success || rb.Gate.Description != desc {
		a := gateAction(env.Name, image, rb, commitstatus.Success, desc)
		a.IsRollback = true
		out = append(out, a)
	}
	if env.Rollback == RollbackAuto && !held {
		out = append(out, mergeAction(env.Name, image, rb, true))
	}
	return out
}
