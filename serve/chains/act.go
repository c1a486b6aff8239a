package chains

import (
	"context"
	"errors"
	"fmt"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust"
)

// act carries out one action and records its outcome with record, which
// applies it to the ledger (and again to a fresher one, should the
// ledger change meanwhile).
func (rl *Runner) act(ctx context.Context, env promote.Env, record func(func(*release.Ledger)), a release.Action) error {
	log := logctx.From(ctx).With("env", a.Env, "image", a.Image)
	switch a.Kind {
	case release.Promote:
		return rl.promoteOnward(ctx, env, record, a)
	case release.ReadyRollback:
		// The branch a failure would open its rollback on, pushed while
		// the readiness window runs: at the deadline only the pull
		// request is left to open. Should this fail, the rollback pushes
		// it then.
		res, err := promote.Run(ctx, env, rollbackRequest(a, true))
		for _, r := range res {
			if r.Status == promote.StatusReadied {
				record(func(l *release.Ledger) { l.RollbackReadied(a.Env, a.Image, a.Failed, r.Branch, r.Meta.Head) })
			}
		}
		return err
	case release.DropRollback:
		err := gitforge.DeleteBranch(ctx, env.CloneURL, a.Branch, a.Head, env.Auth)
		if errors.Is(err, gitforge.ErrPushRejected) {
			log.Info("the readied rollback branch moved since; kept", "branch", a.Branch)
			return nil
		}
		return err
	case release.Rollback:
		// The restored digest goes back with the tag it had when it was
		// proven here, never the failed release's.
		res, err := promote.Run(ctx, env, rollbackRequest(a, false))
		if p := openPull(res); p != nil {
			now := rl.now()
			record(func(l *release.Ledger) {
				for _, m := range membersOf(a) {
					l.RollbackOpened(a.Env, m.Image, release.Proposal{PR: p.Number, Digest: m.Digest, Head: p.HeadSHA, Failed: m.Failed, Group: a.Group})
					l.Log(now, a.Env, m.Image, release.ReasonRollbackOpened,
						fmt.Sprintf("opened the rollback #%d from %s to %s%s", p.Number, imageref.Short(m.Failed), imageref.Short(m.Digest), withGroup(a.Group)))
				}
			})
			log.Warn("opened a rollback", "failed", a.Failed, "to", a.Digest, "number", p.Number, "evidence", a.Evidence)
		}
		return err
	case release.Gate:
		return rl.postGate(ctx, env, record, a)
	case release.MergePR:
		return merge(ctx, env, a)
	case release.Report:
		log.Warn("release: " + a.Evidence)
	}
	return nil
}

// promoteOnward opens the onward pull request of a, proven upstream.
// The onward promotion is checked as CI's was: a digest that was proven
// to run is still refused when the policy does not pass it. The digest
// goes on with the tag the upstream pins it with, and the digest is what
// counts: a tag moved since changes nothing.
func (rl *Runner) promoteOnward(ctx context.Context, env promote.Env, record func(func(*release.Ledger)), a release.Action) error {
	req := promote.Request{Target: a.Env, AllowTagMoved: true, Group: a.Group}
	for _, m := range membersOf(a) {
		req.Inputs = append(req.Inputs, promote.Input{Image: m.Image, Digest: m.Digest, Tags: tagsOf(m.Tag), Source: pr.SourceProof})
		if m.Proof != nil {
			req.Proofs = append(req.Proofs, m.Proof)
		}
	}
	req.Policy = rl.deps.Policy
	res, err := promote.Run(ctx, env, req)
	if r := (*trust.Refusal)(nil); errors.As(err, &r) {
		if rl.deps.Refused != nil {
			rl.deps.Refused(ctx, env.Repo.String(), r)
		}
		now := rl.now()
		record(func(l *release.Ledger) { NoteRefusal(l, now, r) })
	}
	if p := openPull(res); p != nil {
		now := rl.now()
		record(func(l *release.Ledger) {
			for _, m := range membersOf(a) {
				l.Proposed(a.Env, m.Image, release.Proposal{PR: p.Number, Digest: m.Digest, Head: p.HeadSHA, From: a.From, Group: a.Group})
				l.Log(now, a.Env, m.Image, release.ReasonPromotionOpened,
					fmt.Sprintf("opened #%d: %s, proven in %s, into %s%s", p.Number, imageref.Short(m.Digest), a.From, a.Env, withGroup(a.Group)))
			}
		})
		logctx.From(ctx).Info("proposed a proven digest onward", "env", a.Env, "image", a.Image, "digest", a.Digest, "from", a.From, "number", p.Number)
	}
	return err
}

// postGate posts a's gate on its pull request.
func (rl *Runner) postGate(ctx context.Context, env promote.Env, record func(func(*release.Ledger)), a release.Action) error {
	forge, ok := env.Forge.(*gitforge.Gitea)
	if !ok {
		return errors.New("posting a gate status needs the Gitea forge")
	}
	err := forge.SetStatus(ctx, env.Repo, a.Head, gitforge.Status{Context: release.PullContext, State: a.State, Description: a.Description})
	if err == nil {
		record(func(l *release.Ledger) {
			for _, m := range membersOf(a) {
				l.Posted(a.Env, m.Image, a.PR, a.State, a.Description)
			}
		})
		rl.chainm.Gates.WithLabelValues(env.Repo.String(), a.Env, string(a.State)).Inc()
	}
	return err
}

// merge merges a's pull request, at the head pinbot judged.
func merge(ctx context.Context, env promote.Env, a release.Action) error {
	log := logctx.From(ctx).With("env", a.Env, "image", a.Image)
	forge, ok := env.Forge.(*gitforge.Gitea)
	if !ok {
		return errors.New("merging needs the Gitea forge")
	}
	what := "Merged by pinbot: the gate is green"
	if a.IsRollback {
		what = "Merged by pinbot: rollback " + imageref.Short(a.Digest)
	}
	err := forge.MergePull(ctx, env.Repo, a.PR, a.Head, what)
	switch {
	case errors.Is(err, gitforge.ErrNotMergeable):
		log.Debug("not mergeable yet (approvals, checks)", "number", a.PR)
		return nil
	case errors.Is(err, gitforge.ErrHeadMoved):
		// Someone pushed to pinbot's branch: that head is judged as
		// anyone's pull request is (gatePulls), never merged here.
		log.Warn("not merged: the pull request's head is not the commit pinbot pushed and judged", "number", a.PR, "judged", a.Head)
		return nil
	case err == nil:
		log.Info("merged", "number", a.PR, "rollback", a.IsRollback)
	}
	return err
}

// rollbackRequest is the promotion of a Rollback, or of a ReadyRollback
// (ready): the same commit either way (promote.Rollback.At).
func rollbackRequest(a release.Action, ready bool) promote.Request {
	req := promote.Request{Target: a.Env, AllowOlder: true, AllowTagMoved: true, Group: a.Group,
		Rollback: &promote.Rollback{Failed: a.Failed, Evidence: a.Evidence, At: a.At, Ready: ready}}
	for _, m := range membersOf(a) {
		req.Inputs = append(req.Inputs, promote.Input{Image: m.Image, Digest: m.Digest, Tags: tagsOf(m.Tag), Source: pr.SourceRollback})
	}
	return req
}

// membersOf are a's images: a group's members, or a's own.
func membersOf(a release.Action) []release.Member {
	if len(a.Members) > 0 {
		return a.Members
	}
	return []release.Member{{Image: a.Image, Digest: a.Digest, Tag: a.Tag, Proof: a.Proof, Failed: a.Failed}}
}

// withGroup says which group an action moved, if any.
func withGroup(group string) string {
	if group == "" {
		return ""
	}
	return " with its group " + group
}

// tagsOf is an Input's Tags for tag, none for "".
func tagsOf(tag string) []string {
	if tag == "" {
		return nil
	}
	return []string{tag}
}

// openPull is the pull request a promotion left open, if any, with the
// head pinbot pushed (or found to be its own) as HeadSHA: Gitea records a
// pushed head in its pull request a moment later, and the ledger keeps the
// commit pinbot judges and merges.
func openPull(res []promote.Result) *gitforge.Pull {
	for _, r := range res {
		if r.Pull != nil && r.Pull.State != gitforge.StateClosed {
			p := *r.Pull
			if r.Meta.Head != "" {
				p.HeadSHA = r.Meta.Head
			}
			return &p
		}
	}
	return nil
}

// NoteRefusal records a signature policy's refusal in a repository's
// ledger, whose events every replica's dashboard shows.
func NoteRefusal(l *release.Ledger, now time.Time, r *trust.Refusal) {
	l.Refused(now, r.Image, r.Digest, r.Rule+": "+r.Reason)
}
