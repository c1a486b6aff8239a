package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
)

// pullSeen is what gatePulls last read of a pull request and posted on it.
type pullSeen struct {
	head   string                       // its head commit
	pinned map[string]map[string]string // what the head pins, by environment and image
	posted string                       // "state: description" posted on head
}

// gatePulls posts pinbot/gate on every open pull request into the
// repository that is not one of pinbot's own onward or rollback pull
// requests at the head pinbot pushed (Step keeps theirs): a person's,
// Renovate's, CI's, and pinbot's own once someone else pushed to its
// branch. Each is judged pin by pin by release.JudgePull against the
// ledger, again whenever its head, a hold, a proof or a window changes the
// answer.
func (rl *releaser) gatePulls(ctx context.Context, env promote.Env, l *release.Ledger, chain release.Chain, base *promote.Inventory, attested release.AttestationOf) error {
	forge, ok := env.Forge.(*gitforge.Gitea)
	if !ok {
		return nil
	}
	pulls, err := forge.ListPulls(ctx, env.Repo, gitforge.StateOpen)
	if err != nil {
		return err
	}
	own := map[int64]string{} // pinbot's pull requests, at the heads it pushed
	for _, images := range l.Envs {
		for _, t := range images {
			if t.Proposal != nil {
				own[t.Proposal.PR] = t.Proposal.Head
			}
			if t.Rollback != nil {
				own[t.Rollback.PR] = t.Rollback.Head
			}
		}
	}
	var errs []error
	open := map[string]bool{}
	defer rl.forgetPulls(env.Repo.String(), open)
	for _, p := range pulls {
		if p.HeadSHA == "" || (own[p.Number] != "" && own[p.Number] == p.HeadSHA) {
			continue
		}
		key := fmt.Sprintf("%s#%d", env.Repo, p.Number)
		open[key] = true
		rl.mu.Lock()
		seen := rl.pulls[key]
		rl.mu.Unlock()
		if seen == nil || seen.head != p.HeadSHA {
			at := env
			at.Base = p.Head
			inv, err := promote.ReadInventory(ctx, at)
			if err != nil {
				errs = append(errs, fmt.Errorf("pull request #%d: reading its head: %w", p.Number, err))
				continue
			}
			seen = &pullSeen{head: p.HeadSHA, pinned: inv.Pinned}
		}
		state, desc := release.JudgePull(l, chain, base.Pinned, seen.pinned, rl.now(), attested)
		if posted := string(state) + ": " + desc; posted != seen.posted {
			err := forge.SetStatus(ctx, env.Repo, p.HeadSHA, gitforge.Status{Context: GateContext, State: state, Description: desc})
			if err != nil {
				errs = append(errs, fmt.Errorf("pull request #%d: %w", p.Number, err))
				continue
			}
			seen.posted = posted
			logctx.From(ctx).Info("judged a pull request", "number", p.Number, "gate", state, "why", desc)
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
// no longer open.
func (rl *releaser) forgetPulls(repo string, open map[string]bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	for key := range rl.pulls {
		if strings.HasPrefix(key, repo+"#") && !open[key] {
			delete(rl.pulls, key)
		}
	}
}
