package serve

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
	"pinbot.dev/pinbot/internal/imageref"
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
// (mergeQueued).
func (rl *releaser) gatePulls(ctx context.Context, env promote.Env, l *release.Ledger, chain release.Chain, base *promote.Inventory, attested release.AttestationOf) error {
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
		} else {
			rl.answerForged(ctx, forge, env.Repo, key, p, state, desc, &errs)
		}
		if state == commitstatus.Success && slices.Contains(p.Labels, gitforge.QueueLabel) {
			if err := mergeQueued(ctx, forge, env.Repo, p, desc); err != nil {
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

// mergeQueued merges a pull request someone labelled gitforge.QueueLabel,
// as a merge queue (bors, Prow's tide) does: only at the head whose
// pinbot/gate pinbot itself just posted green, so it merges past the gate
// only. Gitea's approvals and required checks still hold: a pull request
// that lacks them stays queued, tried again at the next step.
func mergeQueued(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, p gitforge.Pull, desc string) error {
	log := logctx.From(ctx)
	msg := fmt.Sprintf("Merged by pinbot's merge queue (label %s) at %s: %s %s", gitforge.QueueLabel, commitid.Short(p.HeadSHA), GateContext, desc)
	err := forge.MergePull(ctx, repo, p.Number, p.HeadSHA, msg)
	switch {
	case errors.Is(err, gitforge.ErrNotMergeable):
		log.Debug("queued, not mergeable yet (approvals, checks)", "number", p.Number)
		return nil
	case errors.Is(err, gitforge.ErrHeadMoved):
		return nil // its new head is judged at the next step
	case err == nil:
		log.Info("merged a queued pull request", "number", p.Number, "author", p.Author, "head", p.HeadSHA)
	}
	return err
}

// forgetPulls drops what gatePulls kept of repo's pull requests that are
// no longer open, and the forged statuses answered on them.
func (rl *releaser) forgetPulls(repo string, open map[string]bool) {
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

// readPullHead reads what the head branch of a pull request pins, with
// the base's .pinbot.yaml sorting its files into environments: a head
// that edits the rules is judged by the old ones, and fails for the edit
// (release.ChainChange). Pins without a digest count only where the base
// lacks them, and so does a digest pin of a gated environment the head
// drops.
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
	// A reference by tag alone in a gated environment, which the base
	// lacks: the base is read for its own only when the head has one.
	var tagged map[string][]string
	for target, refs := range inv.Tagged {
		if e, ok := base.Config.Environments.Get(target); !ok || e.From == "" {
			continue // the first environments have no gate to pass
		}
		if tagged == nil {
			b, err := promote.ReadInventoryUnder(ctx, env, &base.Config)
			if err != nil {
				return release.PullHead{}, fmt.Errorf("reading the base's references by tag: %w", err)
			}
			tagged = b.Tagged
		}
		for _, r := range refs {
			if !slices.Contains(tagged[target], r) {
				h.Loose[target] = append(h.Loose[target], r)
			}
		}
	}
	// A gated environment's digest pin the head drops: the gate would not
	// judge what runs in its place.
	for _, e := range base.Config.Environments {
		for image, digest := range base.Pinned[e.Name] {
			if e.From != "" && len(inv.Every[e.Name][image]) == 0 {
				h.Loose[e.Name] = append(h.Loose[e.Name], fmt.Sprintf("%s: the base pins %s, the head pins no digest of it (a reference by tag alone is no pin)", image, imageref.Short(digest)))
			}
		}
		slices.Sort(h.Loose[e.Name])
	}
	return h, nil
}

// answerForged answers a pinbot/gate another account posted over pinbot's
// own state: description on pull request p (see answerForged): pinbot
// posts its own again and, once per head and author, comments on the pull
// request, logs a warning and notifies.
func (rl *releaser) answerForged(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, key string, p gitforge.Pull, state commitstatus.State, desc string, errs *[]error) {
	forger, err := answerForged(ctx, forge, repo, p.HeadSHA, state, desc)
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
	what := fmt.Sprintf("%s on #%d (%s) was posted by %s, not pinbot; pinbot posted its own again: %s: %s", GateContext, p.Number, commitid.Short(p.HeadSHA), forger, state, desc)
	logctx.From(ctx).Warn("answered a forged pinbot/gate", "number", p.Number, "head", p.HeadSHA, "author", forger)
	if told {
		return
	}
	if err := forge.Comment(ctx, repo, p.Number, forgedComment(forger, state, desc)); err != nil {
		*errs = append(*errs, fmt.Errorf("pull request #%d: %w", p.Number, err))
	}
	if rl.d.notify != nil {
		rl.d.notify.Send(notify.Event{At: rl.now(), Type: notify.Warning, Reason: ReasonGateForged, Repo: repo.String(), Message: what})
	}
}
