package release

import (
	"fmt"
	"path"
	"strings"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release/freeze"
	"pinbot.dev/pinbot/trust/proven"
)

// groups are e's groups among images, each with at least one member.
func (e *Environment) groups(images []string) []Group {
	var out []Group
	for _, g := range e.Together {
		if grp := resolve(g, images); len(grp.Members) > 0 {
			out = append(out, grp)
		}
	}
	return out
}

// onwardGroup moves group g from env into next as one: once every member
// is proven in env and one differs from what next pins, it proposes the
// digests proven there, in one pull request; its gate is the worst of
// the members' (so the soak counts from when the last of them held), and
// auto-merge merges it once.
func (s stepper) onwardGroup(env Environment, next *Environment, g Group) []Action {
	ts := make([]*Track, len(g.Members))
	ns := make([]*Track, len(g.Members))
	for i, m := range g.Members {
		if ts[i] = s.l.Lookup(env.Name, m); ts[i] == nil {
			return nil // not in env: the group cannot move from there
		}
		ns[i] = s.l.Track(next.Name, m)
	}
	frozenUntil, frozen := freeze.Until(next.Freeze, s.now)
	_, paused := s.l.pausedAt(next)
	proven, differs, proposed, blocked := true, false, true, frozen || paused
	for i, m := range g.Members {
		t, n := ts[i], ns[i]
		if t.Proven == "" {
			proven = false
			continue
		}
		differs = differs || n.Pinned != t.Proven
		proposed = proposed && n.Proposal != nil && n.Proposal.Digest == t.Proven && n.Proposal.Group == g.Name
		blocked = blocked || s.l.Held(next.Name, m, t.Proven) != nil || n.Rollback != nil || settling(n, next, s.now) || ranBefore(n, t.Proven)
	}
	var out []Action
	if proven && differs && !proposed && !blocked {
		a := Action{Kind: Promote, Env: next.Name, Image: g.Members[0], Digest: ts[0].Proven, From: env.Name, Group: g.Name}
		for i, m := range g.Members {
			held, _ := ts[i].Soaked(s.now, env.Soak)
			pa := promoteAction(next.Name, m, env, ts[i], held)
			a.Members = append(a.Members, Member{Image: m, Digest: pa.Digest, Tag: pa.Tag, Proof: pa.Proof})
		}
		out = append(out, a)
	}
	p := ns[0].Proposal
	if p == nil || p.Group != g.Name || p.From != env.Name || p.Head == "" {
		return out
	}
	state, desc := commitstatus.Success, ""
	var green []string
	for i, m := range g.Members {
		q := ns[i].Proposal
		if q == nil || q.PR != p.PR {
			return out // the members' proposals are not one pull request yet
		}
		st, d := s.gateOf(env, next, m, ts[i], q, frozen, frozenUntil)
		switch {
		case st == commitstatus.Success:
			green = append(green, path.Base(m))
		case state == commitstatus.Success || st == commitstatus.Failure && state != commitstatus.Failure:
			state, desc = st, path.Base(m)+": "+d
		}
	}
	if state == commitstatus.Success {
		desc = fmt.Sprintf("%s proven together in %s", strings.Join(green, ", "), env.Name)
	}
	if posted := (PostedGate{State: state, Description: desc}); p.Gate == nil || *p.Gate != posted {
		a := gateAction(next.Name, g.Members[0], p, state, desc)
		a.Group, a.Members = g.Name, members(g.Members)
		out = append(out, a)
	}
	if next.AutoMerge && state == commitstatus.Success && !frozen {
		a := mergeAction(next.Name, g.Members[0], p, false)
		a.Group = g.Name
		out = append(out, a)
	}
	return out
}

// rollbackSet extends the rollback of image, a member of g in env whose
// merge failed, to every member merged with it: each is held in env and
// below and goes back to the digest proven before, in one pull request.
// t is image's track, its Rollback already decided.
func (s stepper) rollbackSet(env Environment, g Group, image string, t *Track) Action {
	m := t.Merged
	t.Rollback.Group = g.Name
	a := Action{Kind: Rollback, Env: env.Name, Image: image, Digest: t.Rollback.Digest, Tag: t.Rollback.Tag, Failed: m.Digest,
		Evidence: t.Rollback.Evidence, At: t.Rollback.At, Group: g.Name}
	for _, sib := range g.Members {
		n := s.l.Lookup(env.Name, sib)
		if sib == image || n == nil || n.Merged == nil || n.Merged.Rollback || !n.Merged.At.Equal(m.At) || n.Rollback != nil {
			continue
		}
		why := fmt.Sprintf("rolled back with its group %s: %s of %s failed: %s", g.Name, imageref.Short(m.Digest), image, m.Failure)
		n.Merged.Done, n.Merged.Failure = true, why
		to, tag := rollbackTo(n, n.Merged)
		s.l.hold(s.chain.Below(env.Name), Hold{Image: sib, Digest: n.Merged.Digest, Reason: why, Since: s.now, From: env.Name, RolledBackTo: to, Known: knownDigests(n)})
		s.l.event(s.now, env.Name, sib, ReasonHeld, fmt.Sprintf("%s is held with its group %s; rolling back to %s", imageref.Short(n.Merged.Digest), g.Name, imageref.Short(to)))
		if to != "" {
			n.Rollback = &Proposal{Digest: to, Failed: n.Merged.Digest, Evidence: why, Tag: tag, At: m.At, Group: g.Name}
		}
	}
	return groupRollback(s.l, a, env.Name, g.Members)
}

// groupRollback fills rollback a's members: the images of members in env
// whose rollback was decided with a's (same group and time).
func groupRollback(l *Ledger, a Action, env string, members []string) Action {
	a.Members = nil
	for _, im := range members {
		if n := l.Lookup(env, im); n != nil && n.Rollback != nil && n.Rollback.Group == a.Group && n.Rollback.At.Equal(a.At) {
			a.Members = append(a.Members, Member{Image: im, Digest: n.Rollback.Digest, Tag: n.Rollback.Tag, Failed: n.Rollback.Failed})
		}
	}
	return a
}

// members are a Gate's members: the images it is posted for.
func members(images []string) []Member {
	out := make([]Member, len(images))
	for i, im := range images {
		out[i] = Member{Image: im}
	}
	return out
}

// onePerPull drops the second and later merges of one pull request: a
// group's members share theirs.
func onePerPull(as []Action) []Action {
	seen := map[int64]bool{}
	out := as[:0]
	for _, a := range as {
		if a.Kind == MergePR && a.PR != 0 {
			if seen[a.PR] {
				continue
			}
			seen[a.PR] = true
		}
		out = append(out, a)
	}
	return out
}

// GroupProven is the group that image moves with out of env (a group of
// an environment that comes from env), with each member's digest proven
// in env now; nil unless every member is proven there.
func GroupProven(l *Ledger, chain Chain, env, image string) *proven.Group {
	var images []string
	for _, e := range chain {
		images = append(images, l.Images(e.Name)...)
	}
	for _, name := range chain.Next(env) {
		next, _ := chain.Get(name)
		g, ok := next.groupOf(image, images)
		if !ok {
			continue
		}
		out := &proven.Group{Name: g.Name}
		for _, m := range g.Members {
			t := l.Lookup(env, m)
			if t == nil || t.Proven == "" {
				return nil
			}
			out.Members = append(out.Members, proven.Member{Image: m, Digest: t.Proven})
		}
		return out
	}
	return nil
}
