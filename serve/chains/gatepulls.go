package chains

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/notify"
)

// pullSeen is what gatePulls last read of a pull request and posted on it.
type pullSeen struct {
	head   string           // its head commit
	pinned release.PullHead // what the head pins, read with the base's rules
	posted string           // "state: description" posted on head
}

// gatePulls posts pinbot/gate on every open pull request into the
// repository that is not one of pinbot's own onward or rollback pull
// requests at the head pinbot pushed (Step keeps theirs): a person's,
// Renovate's, CI's, and pinbot's own once someone else pushed to its
// branch. Each is judged pin by pin by release.JudgePull against the
// ledger, again whenever its head, a hold, a proof or a window changes the
// answer. One labelled gitforge.QueueLabel that passes is merged
// (MergeQueued).
func (rl *Runner) gatePulls(ctx context.Context, env promote.Env, l *release.Ledger, chain release.Chain, base *promote.Inventory, attested release.AttestationOf) error {
	forge, ok := env.Forge.(*gitforge.Gitea)
	if !ok {
		return nil
	}
	pulls, err := forge.ListPulls(ctx, env.Repo, gitforge.StateOpen)
	if err != nil {
		return err
	}
	own := map[int64]*release.Proposal{} // pinbot's pull requests, at the heads it pushed
	for _, images := range l.Envs {
		for _, t := range images {
			for _, p := range []*release.Proposal{t.Proposal, t.Rollback} {
				if p != nil && p.Head != "" {
					own[p.PR] = p
				}
			}
		}
	}
	var errs []error
	open := map[string]bool{}
	defer rl.forgetPulls(env.Repo.String(), open)
	for _, p := range pulls {
		if p.HeadSHA == "" {
			continue
		}
		key := fmt.Sprintf("%s#%d", env.Repo, p.Number)
		open[key] = true
		if mine := own[p.Number]; mine != nil && mine.Head == p.HeadSHA {
			// Step keeps its gate; a forged one over it is answered.
			if g := mine.Gate; g != nil {
				rl.answerForged(ctx, forge, env.Repo, key, p, g.State, g.Description, &errs)
			}
			continue
		}
		rl.mu.Lock()
		seen := rl.pulls[key]
		rl.mu.Unlock()
		var state commitstatus.State
		var desc string
		if seen == nil || seen.head != p.HeadSHA {
			head, err := ReadPullHead(ctx, env, p.Head, base)
			if err != nil {
				// A head pinbot cannot read (a .pinbot.yaml that does not
				// load, say) fails the gate, and is read again next time.
				errs = append(errs, fmt.Errorf("pull request #%d: reading its head: %w", p.Number, err))
				posted := ""
				if seen != nil {
					posted = seen.posted
				}
				seen = &pullSeen{posted: posted}
				state, desc = commitstatus.Failure, "pinbot cannot read this head: "+clip.Quote(redact.String(err.Error()))
			} else {
				seen = &pullSeen{head: p.HeadSHA, pinned: head}
			}
		}
		if state == "" {
			state, desc = Judge(l, chain, base.Pinned, seen.pinned, p.Number, p.HeadSHA, rl.now(), attested)
		}
		if posted := string(state) + ": " + desc; posted != seen.posted {
			err := forge.SetStatus(ctx, env.Repo, p.HeadSHA, gitforge.Status{Context: release.PullContext, State: state, Description: desc})
			if err != nil {
				errs = append(errs, fmt.Errorf("pull request #%d: %w", p.Number, err))
				continue
			}
			seen.posted = posted
			logctx.From(ctx).Info("judged a pull request", "number", p.Number, "gate", state, "why", desc)
		} else {
			rl.answerForged(ctx, forge, env.Repo, key, p, state, desc, &errs)
		}
		if state == commitstatus.Success && slices.Contains(p.Labels, gitforge.QueueLabel) {
			if err := MergeQueued(ctx, forge, env.Repo, p, desc); err != nil {
				errs = append(errs, fmt.Errorf("pull request #%d: %w", p.Number, err))
			}
		}
		rl.mu.Lock()
		if rl.pulls == nil {
			rl.pulls = map[string]*pullSeen{}
		}
		rl.pulls[key] = seen
		rl.mu.Unlock()
	}
	return errors.Join(errs...)
}

// forgetPulls drops what gatePulls kept of repo's pull requests that are
// no longer open, and the forged statuses answered on them.
func (rl *Runner) forgetPulls(repo string, open map[string]bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	for key := range rl.pulls {
		if strings.HasPrefix(key, repo+"#") && !open[key] {
			delete(rl.pulls, key)
		}
	}
	for key := range rl.forged {
		pull, _, _ := strings.Cut(key, "@")
		if strings.HasPrefix(pull, repo+"#") && !open[pull] {
			delete(rl.forged, key)
		}
	}
}

// answerForged answers a pinbot/gate another account posted over pinbot's
// own state: description on pull request p (see answerForged): pinbot
// posts its own again and, once per head and author, comments on the pull
// request, logs a warning and notifies.
func (rl *Runner) answerForged(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, key string, p gitforge.Pull, state commitstatus.State, desc string, errs *[]error) {
	forger, err := AnswerForged(ctx, forge, repo, p.HeadSHA, state, desc)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("pull request #%d: reading its pinbot/gate back: %w", p.Number, err))
		return
	}
	if forger == "" {
		return
	}
	once := key + "@" + p.HeadSHA + " " + forger
	rl.mu.Lock()
	told := rl.forged[once]
	if rl.forged == nil {
		rl.forged = map[string]bool{}
	}
	rl.forged[once] = true
	rl.mu.Unlock()
	what := fmt.Sprintf("%s on #%d (%s) was posted by %s, not pinbot; pinbot posted its own again: %s: %s", release.PullContext, p.Number, commitid.Short(p.HeadSHA), forger, state, desc)
	logctx.From(ctx).Warn("answered a forged pinbot/gate", "number", p.Number, "head", p.HeadSHA, "author", forger)
	if told {
		return
	}
	if err := forge.Comment(ctx, repo, p.Number, ForgedComment(forger, state, desc)); err != nil {
		*errs = append(*errs, fmt.Errorf("pull request #%d: %w", p.Number, err))
	}
	if rl.deps.Notify != nil {
		rl.deps.Notify.Send(notify.Event{At: rl.now(), Type: notify.Warning, Reason: ReasonGateForged, Repo: repo.String(), Message: what})
	}
}

// ReasonGateForged names, in logs and notifications, a pinbot/gate that
// another account posted on a head pinbot judged.
const ReasonGateForged = "GateForged"
