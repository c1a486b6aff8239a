package release

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release/freeze"
)

// Input is one look at a repository's environments: what Git pins in
// each (environment to image to digest), and what each environment's apps
// show of each image.
type Input struct {
	Now      time.Time
	Chain    Chain
	Pinned   map[string]map[string]string
	Assessed map[string]map[string]Assessment
	// Tags are the tags Pinned's pins carry (environment, image), ""
	// where they carry none.
	Tags map[string]map[string]string
	// Attested reads the attestation an environment that requires one
	// needs of a proposal's digest before its gate turns green.
	Attested AttestationOf
	// Bypassed says, by environment and image, how the digest newly
	// pinned there merged past pinbot's gate (Merge.Bypass); absent when
	// it merged through it.
	Bypassed map[string]map[string]string
}

// Step brings the ledger up to what in shows and returns what to do: a
// digest proven upstream is proposed onward at once, its gate pending
// until it has held for the soak and then following its upstream proof;
// a merged digest that fails to prove within the window is rolled back
// to the last proven one and held there and below; and an
// environment in a freeze window gets nothing opened or merged. It
// changes l; actions that succeed are recorded with Ledger.Proposed and
// friends.
func Step(l *Ledger, in Input) []Action {
	s := stepper{l: l, chain: in.Chain, now: in.Now, attested: in.Attested, bypassed: in.Bypassed}
	for _, env := range in.Chain {
		for _, im := range imagesOf(in, l, env.Name) {
			if !slices.Contains(s.images, im) {
				s.images = append(s.images, im)
			}
		}
	}
	if stop := orphanHolds(l, in.Chain); stop != "" {
		if l.Stopped == stop {
			return nil
		}
		l.Stopped = stop
		l.event(s.now, "", "", ReasonChainStopped, stop)
		return []Action{reportAction("", "", "", stop)}
	}
	l.Stopped = ""
	var out, readying []Action
	for _, env := range in.Chain {
		frozenUntil, frozen := freeze.Until(env.Freeze, s.now)
		_, rollbacksHeld := freeze.RollbacksUntil(env.Freeze, s.now)
		switch was := l.frozen(env.Name); {
		case frozen && !was:
			l.event(s.now, env.Name, "", ReasonFreezeStarted, "a freeze window holds "+env.Name+" until "+frozenUntil.UTC().Format(time.RFC3339)+": nothing is opened or merged there")
		case !frozen && was:
			l.event(s.now, env.Name, "", ReasonFreezeEnded, "the freeze window of "+env.Name+" ended")
		}
		for _, image := range imagesOf(in, l, env.Name) {
			t := l.Track(env.Name, image)
			if frozen {
				u := frozenUntil
				t.FrozenUntil = &u
			} else {
				t.FrozenUntil = nil
			}
			if pinned := in.Pinned[env.Name][image]; pinned != "" {
				s.repin(t, env, image, pinned)
				t.PinnedTag = in.Tags[env.Name][image]
			}
			out = append(out, s.asked(t, env, image, rollbacksHeld)...)
			obs, observed := in.Assessed[env.Name][image]
			if !observed {
				continue
			}
			s.prove(t, env, image, obs)
			out = append(out, s.watch(t, env, image, obs, rollbacksHeld)...)
			readying = append(readying, s.readyRollback(t, env, image)...)
			out = append(out, rollbackPull(t, env, image, rollbacksHeld)...)
		}
	}
	// Onward, once every environment's proof is up to date: each image,
	// then each group that moves as one.
	for _, env := range in.Chain {
		for _, image := range imagesOf(in, l, env.Name) {
			out = append(out, s.onward(env, image)...)
		}
		for _, name := range in.Chain.Next(env.Name) {
			next, _ := in.Chain.Get(name)
			for _, g := range next.groups(s.images) {
				out = append(out, s.onwardGroup(env, next, g)...)
			}
		}
	}
	// Readied rollbacks last: what a reviewer waits for goes first.
	return onePerPull(append(out, readying...))
}

// stepper is one Step: the ledger it changes, the chain and the time it
// decides at.
type stepper struct {
	l        *Ledger
	chain    Chain
	now      time.Time
	attested AttestationOf
	// images are every image the step sees, in any environment: what
	// groups (Environment.Together) resolve against.
	images []string
	// bypassed is Input.Bypassed.
	bypassed map[string]map[string]string
}

// imagesOf are the images Git pins in env or the ledger tracks there.
func imagesOf(in Input, l *Ledger, env string) []string {
	seen := map[string]bool{}
	var out []string
	for im := range in.Pinned[env] {
		if !seen[im] {
			seen[im] = true
			out = append(out, im)
		}
	}
	for im := range l.Envs[env] {
		if !seen[im] {
			seen[im] = true
			out = append(out, im)
		}
	}
	sort.Strings(out)
	return out
}

// repin notes a new digest pinned in env: a merge to watch, pull
// requests it fulfils, holds a newer digest lifts.
func (s stepper) repin(t *Track, env Environment, image, pinned string) {
	if t.Pinned == pinned {
		return
	}
	first := t.Pinned == ""
	t.Pinned, t.PinnedAt = pinned, s.now
	t.Proven, t.ProvenSince, t.SoakedAt, t.Clusters = "", nil, nil, nil
	if first {
		return // pinbot's first look: nothing merged that it saw
	}
	rollback := t.Rollback != nil && t.Rollback.Digest == pinned
	t.Merged = &Merge{Digest: pinned, At: s.now, Rollback: rollback}
	// Whatever merged, the proposal the ledger knows is no longer what
	// it shows as open: it merged, or another pull request (a person's
	// forced release) overtook it. The next step proposes afresh where a
	// proposal is still due.
	t.Proposal = nil
	if rollback {
		t.Rollback = nil
	}
	what := "merged " + imageref.Short(pinned)
	if rollback {
		what = "merged the rollback to " + imageref.Short(pinned)
	}
	s.l.event(s.now, env.Name, image, ReasonMerged, what)
	if why := s.bypassed[env.Name][image]; why != "" && !rollback {
		t.Merged.Bypass = why
		s.l.event(s.now, env.Name, image, ReasonGateBypassed, "merged "+imageref.Short(pinned)+" past pinbot's gate: "+why+
			"; its proof lifts no hold and is not attested")
	}
}

// liftHolds lifts the holds on image in env that digest, newly proven
// there, supersedes: a digest pinned after the hold was placed and proven
// since, which is neither the rollback's own nor one proven there before
// the hold (Hold.Known). Pinning a digest for a pass lifts nothing, nor
// does an older digest proven again.
func (s stepper) liftHolds(env, image, digest string, pinnedAt time.Time) {
	kept := s.l.Holds[:0]
	for _, h := range s.l.Holds {
		if h.Env == env && h.Image == image && h.Digest != digest && h.RolledBackTo != digest &&
			pinnedAt.After(h.Since) && !slices.Contains(h.Known, digest) {
			s.l.event(s.now, env, image, ReasonHoldLifted, "lifted the hold on "+imageref.Short(h.Digest)+": "+imageref.Short(digest)+", pinned after it, is proven now")
			continue
		}
		kept = append(kept, h)
	}
	s.l.Holds = kept
}

// prove records whether the pinned digest is proven, and since when.
func (s stepper) prove(t *Track, env Environment, image string, obs Assessment) {
	t.Pods, t.Commit = obs.Pods, obs.Commit
	t.proveClusters(obs, s.now)
	if !obs.Proven || obs.Digest != t.Pinned {
		if t.Proven != "" {
			s.l.event(s.now, env.Name, image, ReasonProofBroke, "the proof of "+imageref.Short(t.Proven)+" broke: "+obs.Why)
		}
		t.Proven, t.ProvenSince, t.SoakedAt, t.Why = "", nil, nil, obs.Why
		return
	}
	t.Why = ""
	if t.Proven != t.Pinned {
		since := s.now
		t.Proven, t.ProvenSince, t.SoakedAt = t.Pinned, &since, nil
		s.l.event(s.now, env.Name, image, ReasonProven, "proven "+imageref.Short(t.Pinned))
		if !t.Bypassed() {
			s.liftHolds(env.Name, image, t.Pinned, t.PinnedAt)
		}
	}
	if _, soaked := t.Soaked(s.now, env.Soak); env.Soak > 0 && soaked && t.SoakedAt == nil {
		at := s.now
		t.SoakedAt = &at
		s.l.event(s.now, env.Name, image, ReasonSoaked, fmt.Sprintf("%s soaked in %s for %s", imageref.Short(t.Proven), env.Name, env.Soak))
	}
	if t.LastProven != t.Pinned {
		t.PrevProven, t.LastProven = t.LastProven, t.Pinned
		t.PrevProvenTag, t.LastProvenTag = t.LastProvenTag, t.PinnedTag
	}
	t.LastProvenAt = s.now
	if t.Merged != nil && t.Merged.Digest == t.Pinned {
		t.Merged.Proved, t.Merged.FailingSince = true, nil
	}
}

// proveClusters keeps whether each of the wave's clusters proves the
// pinned digest, and since when.
func (t *Track) proveClusters(obs Assessment, now time.Time) {
	was := t.Clusters
	t.Clusters = nil
	for _, c := range obs.Clusters {
		if i := slices.IndexFunc(was, func(w ClusterProof) bool { return w.Cluster == c.Cluster && w.Since != nil }); c.Proven && i >= 0 {
			c.Since = was[i].Since
		} else if c.Proven {
			c.Since = &now
		}
		t.Clusters = append(t.Clusters, c)
	}
}

// ranBefore reports whether digest was proven in n before what it pins
// now: going back to it is a rollback's decision, never an onward
// promotion's.
func ranBefore(n *Track, digest string) bool {
	return n.Pinned != "" && digest != n.Pinned && (digest == n.LastProven && n.LastProven != n.Pinned || digest == n.PrevProven)
}

// onward proposes env's proven, soaked digest of image to the
// environments that come from env, and keeps their gates.
func (s stepper) onward(env Environment, image string) []Action {
	t := s.l.Lookup(env.Name, image)
	if t == nil {
		return nil
	}
	var out []Action
	held, _ := t.Soaked(s.now, env.Soak)
	for _, name := range s.chain.Next(env.Name) {
		next, _ := s.chain.Get(name)
		if _, grouped := next.groupOf(image, s.images); grouped {
			continue // onwardGroup moves it with its group
		}
		n := s.l.Track(name, image)
		frozenUntil, frozen := freeze.Until(next.Freeze, s.now)
		// Proposed as soon as it is proven, its gate pending until the
		// soak completes: reviewers read the change during the soak,
		// and the gate (and auto-merge) turn green when it ends.
		if state, _, _ := s.l.blocked(next, image, t.Proven, s.now); t.Proven != "" && state == MoveNext {
			out = append(out, promoteAction(name, image, env, t, held))
		}
		p := n.Proposal
		if p == nil || p.From != env.Name || p.Head == "" {
			continue
		}
		state, desc := s.gateOf(env, next, image, t, p, frozen, frozenUntil)
		// A green gate stays posted as it was: its "for how long" moves.
		if posted := (PostedGate{State: state, Description: desc}); p.Gate == nil || *p.Gate != posted && (state != commitstatus.Success || p.Gate.State != commitstatus.Success) {
			out = append(out, gateAction(name, image, p, state, desc))
		}
		if next.AutoMerge && state == commitstatus.Success && !frozen {
			out = append(out, mergeAction(name, image, p, false))
		}
	}
	return out
}

// gateOf is the gate of proposal p of image, proven in env as t says,
// into next: pending while it soaks there (or next is frozen, or its
// attestation is not in yet), green once it has soaked, red once env no
// longer proves it.
func (s stepper) gateOf(env Environment, next *Environment, image string, t *Track, p *Proposal, frozen bool, frozenUntil time.Time) (commitstatus.State, string) {
	held, soaked := t.Soaked(s.now, env.Soak)
	state, desc := commitstatus.Success, ""
	pause, paused := s.l.pausedAt(next)
	switch {
	case frozen:
		state, desc = commitstatus.Pending, "frozen until "+frozenUntil.UTC().Format(time.RFC3339)
	case paused:
		state, desc = commitstatus.Pending, pausedWhy(next.Name, pause)
	case t.Proven == p.Digest && !soaked:
		state, desc = commitstatus.Pending, fmt.Sprintf("proven in %s, soaking until %s", env.Name, stamp(t.ProvenSince.Add(env.Soak)))
	case t.Proven == p.Digest:
		desc = fmt.Sprintf("proven in %s for %s", env.Name, held.Round(time.Second))
	case t.Rollback != nil || s.l.Held(env.Name, image, p.Digest) != nil:
		state, desc = commitstatus.Failure, fmt.Sprintf("%s was rolled back in %s", imageref.Short(p.Digest), env.Name)
	case t.Pinned != p.Digest:
		state, desc = commitstatus.Failure, fmt.Sprintf("%s no longer pins %s", env.Name, imageref.Short(p.Digest))
	default:
		state, desc = commitstatus.Failure, fmt.Sprintf("%s no longer proves %s: %s", env.Name, imageref.Short(p.Digest), t.Why)
	}
	if state == commitstatus.Success && next.RequireAttestation {
		// The ledger's proof holds; the attestation must say so too.
		a, _ := s.chain.Admission(next.Name, image, p.Digest)
		a.Attested = s.attested.of(a)
		if err := attested(a, s.now); err != nil {
			state, desc = commitstatus.Pending, fmt.Sprintf("proven in %s; waiting for its signed attestation", env.Name)
			if r := (*Refusal)(nil); errors.As(err, &r) && r.Detail != "" {
				desc += ": " + r.Detail
			}
		}
	}
	return state, desc
}

// knownDigests are the digests proven in t's environment before a hold:
// proving one of them again lifts no hold.
func knownDigests(t *Track) []string {
	var out []string
	for _, d := range []string{t.LastProven, t.PrevProven} {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// stamp is a time as the ledger's evidence prints it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// orphanHolds says why the chain must stop when holds name environments
// the chain no longer declares: a rename would otherwise drop them.
func orphanHolds(l *Ledger, chain Chain) string {
	var held []string
	for _, h := range l.Holds {
		if _, ok := chain.Get(h.Env); !ok {
			held = append(held, h.Env+" "+h.Image+"@"+h.Digest)
		}
	}
	if len(held) == 0 {
		return ""
	}
	return "the chain is stopped: .pinbot.yaml no longer declares the environment of these holds (renamed or removed?): " +
		strings.Join(held, ", ") + "; restore the name, or release each (pinbot hold release ENV IMAGE@DIGEST)"
}

// Pending lists what an earlier step decided and recorded but did not see
// done, besides the actions of this step: rollbacks whose pull request is
// not recorded (a leader that stopped between the ledger write and the
// pull request), while the failed digest is still pinned. serve carries
// them out after Step's own.
func Pending(l *Ledger, this []Action) []Action {
	var out []Action
	this = slices.Clone(this)
	for env, images := range l.Envs {
		for image, t := range images {
			rb := t.Rollback
			if rb == nil || rb.PR != 0 || t.Pinned != rb.Failed {
				continue
			}
			if slices.ContainsFunc(this, func(a Action) bool {
				return a.Kind == Rollback && a.Env == env && (a.Image == image || slices.ContainsFunc(a.Members, func(m Member) bool { return m.Image == image }))
			}) {
				continue
			}
			a := rollbackOf(env, image, rb)
			if rb.Group != "" {
				// One pull request for the group's members decided together.
				a.Group = rb.Group
				a = groupRollback(l, a, env, l.Images(env))
			}
			this = append(this, a)
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Env+out[i].Image < out[j].Env+out[j].Image })
	return out
}
