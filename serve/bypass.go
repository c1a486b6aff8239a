package serve

import (
	"context"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
)

// bypassed says, by environment and image, how each digest newly pinned
// in an environment with from: merged past pinbot's gate
// (release.Input.Bypassed): no pull request merged the commit at the head
// of the base, or the head that pull request merged lacked pinbot's own
// pinbot/gate success (none, another account's, or not success). Anybody
// who may write to the repository can post a pinbot/gate status, so only
// the status pinbot's account posted counts. A pinbot rollback is never a
// bypass. Nothing is asked of Gitea unless a pin changed; an answer
// Gitea could not give fails the step, which tries again.
//
// The merge is read from the base's head: when several commits land
// between two steps, it is the last one's pull request that is judged.
func (rl *releaser) bypassed(ctx context.Context, env promote.Env, l *release.Ledger, chain release.Chain, inv *promote.Inventory) (map[string]map[string]string, error) {
	forge, ok := env.Forge.(*gitforge.Gitea)
	if !ok {
		return nil, nil
	}
	var out map[string]map[string]string
	var why string
	judged := false
	for _, e := range chain {
		if e.From == "" {
			continue
		}
		for image, digest := range inv.Pinned[e.Name] {
			t := l.Lookup(e.Name, image)
			if t == nil || t.Pinned == "" || t.Pinned == digest || (t.Rollback != nil && t.Rollback.Digest == digest) {
				continue
			}
			if !judged {
				var err error
				if why, err = mergeBypass(ctx, forge, env.Repo, inv.Commit); err != nil {
					return nil, fmt.Errorf("reading how %s merged: %w", imageref.Short(inv.Commit), err)
				}
				judged = true
			}
			if why == "" {
				continue
			}
			if out == nil {
				out = map[string]map[string]string{}
			}
			if out[e.Name] == nil {
				out[e.Name] = map[string]string{}
			}
			out[e.Name][image] = why
		}
	}
	return out, nil
}

// mergeBypass says how commit, the head of repo's base, went past pinbot's
// gate, or "" when the pull request that merged it carried pinbot's own
// pinbot/gate success on the head it merged.
func mergeBypass(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, commit string) (string, error) {
	p, err := forge.PullByMergeCommit(ctx, repo, commit)
	if err != nil {
		return "", err
	}
	if p == nil {
		return fmt.Sprintf("commit %s, which no pull request merged, pins it", imageref.Short(commit)), nil
	}
	gate, self, err := gateOn(ctx, forge, repo, p.HeadSHA)
	pull := fmt.Sprintf("#%d (%s)", p.Number, whoMerged(p))
	switch {
	case err != nil:
		return "", err
	case gate == nil:
		return fmt.Sprintf("%s merged with no %s on its head", pull, GateContext), nil
	case gate.Creator != self:
		return fmt.Sprintf("%s merged with a %s that %s posted, not pinbot", pull, GateContext, gate.Creator), nil
	case gate.State != commitstatus.Success:
		return fmt.Sprintf("%s merged while %s said %s: %s", pull, GateContext, gate.State, gate.Description), nil
	}
	return "", nil
}

// whoMerged names who opened pull request p and who merged it, as Gitea
// says (the body and the branch name are anyone's to write): a forced
// promotion (`pinbot promote --force`) goes in only by a person's merge.
func whoMerged(p *gitforge.Pull) string {
	what := "opened by " + p.Author
	if strings.Contains(p.Head, "forced/") {
		what = "a forced promotion, " + what
	}
	if p.MergedBy != "" {
		what += ", merged by " + p.MergedBy
	}
	return what
}

// gateOn reads back the newest pinbot/gate on head (nil for none), and
// the login pinbot posts as: any writer may post the context, so only its
// author tells pinbot's word from another's.
func gateOn(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, head string) (*gitforge.Status, string, error) {
	self, err := forge.Self(ctx)
	if err != nil {
		return nil, "", err
	}
	statuses, err := forge.Statuses(ctx, repo, head)
	if err != nil {
		return nil, "", err
	}
	for _, st := range statuses {
		if st.Context == GateContext {
			return &st, self, nil
		}
	}
	return nil, self, nil
}

// ReasonGateForged names, in logs and notifications, a pinbot/gate that
// another account posted on a head pinbot judged.
const ReasonGateForged = "GateForged"

// answerForged looks at the newest pinbot/gate on head, a head pinbot
// judged state: description. When another account posted it, pinbot posts
// its own again, so that the head's status is pinbot's word, and returns
// who posted it ("" when pinbot's own stands). Only a head pinbot did not
// pass is looked at: a forged success there is the walk-around.
func answerForged(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, head string, state commitstatus.State, description string) (string, error) {
	if state == commitstatus.Success {
		return "", nil
	}
	gate, self, err := gateOn(ctx, forge, repo, head)
	if err != nil || gate == nil || gate.Creator == self {
		return "", err
	}
	if err := forge.SetStatus(ctx, repo, head, gitforge.Status{Context: GateContext, State: state, Description: description}); err != nil {
		return "", err
	}
	return gate.Creator, nil
}

// forgedComment tells a pull request's reviewers that its pinbot/gate was
// not pinbot's.
func forgedComment(forger string, state commitstatus.State, description string) string {
	return fmt.Sprintf("pinbot: the %s status on this head was posted by `%s`, not by pinbot. pinbot's own judgement stands: "+
		"**%s**: `%s`. A merge of this head is a gate bypass: its proof lifts no hold and is not attested.",
		GateContext, forger, state, strings.ReplaceAll(description, "`", "'"))
}
