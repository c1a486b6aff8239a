package chains

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
)

// ReadPullHead reads what the head branch of a pull request pins, with
// the base's .pinbot.yaml sorting its files into environments: a head
// that edits the rules is judged by the old ones, and fails for the edit
// (release.ChainChange). Pins without a digest count only where the base
// lacks them, and so does a digest pin of a gated environment the head
// drops.
func ReadPullHead(ctx context.Context, env promote.Env, branch string, base *promote.Inventory) (release.PullHead, error) {
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

// MergeQueued merges a pull request someone labelled gitforge.QueueLabel,
// as a merge queue (bors, Prow's tide) does: only at the head whose
// pinbot/gate pinbot itself just posted green, so it merges past the gate
// only. Gitea's approvals and required checks still hold: a pull request
// that lacks them stays queued, tried again at the next step.
func MergeQueued(ctx context.Context, forge *gitforge.Gitea, repo gitforge.Repo, p gitforge.Pull, desc string) error {
	log := logctx.From(ctx)
	msg := fmt.Sprintf("Merged by pinbot's merge queue (label %s) at %s: %s %s", gitforge.QueueLabel, commitid.Short(p.HeadSHA), release.PullContext, desc)
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
