package release

import (
	"fmt"
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
			failure = fmt.Sprintf("not proven within %s of the merge (merged %s, deadline %s): %s", env.ReadyTimeout,
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
	to, tag := rollbackTo(t, m)
	s.l.hold(s.chain.Below(env.Name), Hold{Image: image, Digest: m.Digest, Reason: failure, Since: s.now, From: env.Name, RolledBackTo: to,
		Known: knownDigests(t)})
	if to == "" {
		return report(fmt.Sprintf("%s failed to prove and is held; no digest was proven here before it, so there is nothing to roll back to: %s", imageref.Short(m.Digest), failure))
	}
	s.l.event(s.now, env.Name, image, ReasonHeld, fmt.Sprintf("%s failed to prove and is held; rolling back to %s: %s", imageref.Short(m.Digest), imageref.Short(to), failure))
	// The decision goes into the ledger before the pull request exists.
	t.Rollback = &Proposal{Digest: to, Failed: m.Digest, Evidence: failure, Tag: tag, At: m.At}
	if g, grouped := env.groupOf(image, s.images); grouped {
		return []Action{s.rollbackSet(env, g, image, t)}
	}
	return []Action{rollbackOf(env.Name, image, t.Rollback)}
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
