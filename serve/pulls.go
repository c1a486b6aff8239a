package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
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
		var state commitstatus.State
		var desc string
		if seen == nil || seen.head != p.HeadSHA {
			head, err := readPullHead(ctx, env, p.Head, base)
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
			state, desc = release.JudgePull(l, chain, base.Pinned, seen.pinned, rl.now(), attested)
		}
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

// readPullHead reads what the head branch of a pull request pins, with
// the base's .pinbot.yaml sorting its files into environments: a head
// that edits the rules is judged by the old ones, and fails for the edit
// (release.ChainChange). Pins without a digest count only where the base
// lacks them.
func readPullHead(ctx context.Context, env promote.Env, branch string, base *promote.Inventory) (release.PullHead, error) {
	at := env
	at.Base = branch
	inv, err := promote.ReadInventoryUnder(ctx, at, &base.Config)
	if err != nil {
		return release.PullHead{}, err
	}
	h := release.PullHead{Pinned: inv.Every, Loose: map[string][]string{},
		ChainChange: release.ChainChange(base.Config.Environments, inv.Config.Environments)}
	for target, loose := range inv.Loose {
		for _, l := range loose {
			if !slices.Contains(base.Loose[target], l) {
				h.Loose[target] = append(h.Loose[target], l)
			}
		}
	}
	return h, nil
}
