package release

import (
	"time"

	"pinbot.dev/pinbot/release/freeze"
)

// MoveState says what becomes of a digest proven upstream, in the
// environment that comes from there: why it is not proposed yet, or that
// it is.
type MoveState string

// The states of a Move, in the order Next tells them apart.
const (
	// MoveHeld: it is held in the environment (pinned there or not).
	MoveHeld MoveState = "held"
	// MoveIn: the environment pins it already.
	MoveIn MoveState = "in"
	// MoveReturning: the environment's rollback pull request brings it
	// back.
	MoveReturning MoveState = "returning"
	// MoveProposed: pinbot's pull request proposes it (PR).
	MoveProposed MoveState = "proposed"
	// MoveRollingBack: the environment rolls back from another digest;
	// nothing moves onward until that settles.
	MoveRollingBack MoveState = "rollingBack"
	// MoveRanBefore: it ran in the environment before what it pins now:
	// going back to it is a rollback's decision, never an onward
	// promotion's.
	MoveRanBefore MoveState = "ranBefore"
	// MoveSettling: the environment's last merge is still proving, or
	// failed within its rollback window.
	MoveSettling MoveState = "settling"
	// MoveFrozen: a freeze window holds the environment (Until).
	MoveFrozen MoveState = "frozen"
	// MovePaused: a person paused the promotions into the environment
	// (Ledger.Paused).
	MovePaused MoveState = "paused"
	// MoveNext: the chain proposes it at its next step (its gate
	// pending while it soaks upstream: Left).
	MoveNext MoveState = "next"
)

// Move is what the chain does next with Digest, proven upstream, in an
// environment: the one rule the release chain proposes by (onward) and
// the release page shows.
type Move struct {
	Digest, Tag string
	State       MoveState
	// PR is the pull request that proposes it or brings it back.
	PR int64
	// Until is when a freeze ends; Left how long it still soaks
	// upstream (0 once soaked).
	Until time.Time
	Left  time.Duration
	// Pause is who paused the environment, and why (MovePaused).
	Pause *Ask
}

// Next is what moves next into env of image from env's upstream: the
// digest proven there, and why it is not proposed, or that it is; false
// when nothing of image is proven upstream (or env has none).
func Next(l *Ledger, chain Chain, env, image string, now time.Time) (Move, bool) {
	e, ok := chain.Get(env)
	if !ok || e.From == "" {
		return Move{}, false
	}
	from, _ := chain.Get(e.From)
	u := l.Lookup(e.From, image)
	if u == nil || u.Proven == "" {
		return Move{}, false
	}
	m := Move{Digest: u.Proven, Tag: u.PinnedTag}
	if u.Proven != u.Pinned {
		m.Tag = ""
	}
	if held, ok := u.Soaked(now, soakOf(from)); !ok {
		m.Left = soakOf(from) - held
	}
	m.State, m.PR, m.Until = l.blocked(e, image, u.Proven, now)
	if p, ok := l.pausedAt(e); ok && m.State == MovePaused {
		m.Pause = &p
	}
	return m, true
}

// blocked says why digest, proven upstream of env, is not proposed to
// env: MoveNext when nothing stops it.
func (l *Ledger) blocked(env *Environment, image, digest string, now time.Time) (MoveState, int64, time.Time) {
	n := l.Lookup(env.Name, image)
	if n == nil {
		n = &Track{}
	}
	until, frozen := freeze.Until(env.Freeze, now)
	switch {
	case l.Held(env.Name, image, digest) != nil:
		return MoveHeld, 0, time.Time{}
	case n.Pinned == digest:
		return MoveIn, 0, time.Time{}
	case n.Rollback != nil && n.Rollback.Digest == digest:
		return MoveReturning, n.Rollback.PR, time.Time{}
	case n.Proposal != nil && n.Proposal.Digest == digest:
		return MoveProposed, n.Proposal.PR, time.Time{}
	case n.Rollback != nil:
		return MoveRollingBack, n.Rollback.PR, time.Time{}
	case ranBefore(n, digest):
		return MoveRanBefore, 0, time.Time{}
	case settling(n, env, now):
		return MoveSettling, 0, time.Time{}
	case frozen:
		return MoveFrozen, 0, until
	}
	if _, paused := l.pausedAt(env); paused {
		return MovePaused, 0, time.Time{}
	}
	return MoveNext, 0, time.Time{}
}

// soakOf is env's soak; 0 for none.
func soakOf(env *Environment) time.Duration {
	if env == nil {
		return 0
	}
	return env.Soak
}
