package chains

import (
	"context"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// MergeBypass says how commit, the head of repo's base, went past pinbot's
// gate, or "" when the pull request that merged it carried pinbot's own
// pinbot/gate success on the head it merged.
func MergeBypass(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, commit string) (string, error) {
	p, err := forge.PullByMergeCommit(ctx, repo, commit)
	if err != nil {
		return "", err
	}
	if p == nil {
		return fmt.Sprintf("commit %s, which no pull request merged, pins it", imageref.Short(commit)), nil
	}
	gate, self, err := gateOn(ctx, forge, repo, p.HeadSHA)
	pull := fmt.Sprintf("#%d (%s)", p.Number, whoMerged(p, self))
	switch {
	case err != nil:
		return "", err
	case gate == nil:
		return fmt.Sprintf("%s merged with no %s on its head", pull, release.PullContext), nil
	case gate.Creator != self:
		return fmt.Sprintf("%s merged with a %s that %s posted, not pinbot", pull, release.PullContext, gate.Creator), nil
	case gate.State != commitstatus.Success:
		return fmt.Sprintf("%s merged while %s said %s: %s", pull, release.PullContext, gate.State, gate.Description), nil
	}
	return "", nil
}

// whoMerged names who opened pull request p and who merged it, as Gitea
// says (the body and the branch name are anyone's to write): a forced
// promotion (`pinbot promote --force`) goes in only by a person's merge.
// It is one only when pinbot's account (self) opened it on a forced
// branch: anyone may name a branch so.
func whoMerged(p *gitforge.Pull, self string) string {
	what := "opened by " + p.Author
	if strings.Contains(p.Head, "forced/") && p.Author == self {
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
		if st.Context == release.PullContext {
			return &st, self, nil
		}
	}
	return nil, self, nil
}

// AnswerForged looks at the newest pinbot/gate on head, a head pinbot
// judged state: description. When another account posted it, pinbot posts
// its own again, so that the head's status is pinbot's word, and returns
// who posted it ("" when pinbot's own stands). Only a head pinbot did not
// pass is looked at: a forged success there is the walk-around.
func AnswerForged(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, head string, state commitstatus.State, description string) (string, error) {
	if state == commitstatus.Success {
		return "", nil
	}
	gate, self, err := gateOn(ctx, forge, repo, head)
	if err != nil || gate == nil || gate.Creator == self {
		return "", err
	}
	if err := forge.SetStatus(ctx, repo, head, gitforge.Status{Context: release.PullContext, State: state, Description: description}); err != nil {
		return "", err
	}
	return gate.Creator, nil
}

// ForgedComment tells a pull request's reviewers that its pinbot/gate was
// not pinbot's.
func ForgedComment(forger string, state commitstatus.State, description string) string {
	return fmt.Sprintf("pinbot: the %s status on this head was posted by `%s`, not by pinbot. pinbot's own judgement stands: "+
		"**%s**: `%s`. A merge of this head is a gate bypass: its proof lifts no hold and is not attested.",
		release.PullContext, forger, state, strings.ReplaceAll(description, "`", "'"))
}
