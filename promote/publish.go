package promote

import (
	"context"
	"fmt"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
)

// closeComment explains why a promotion closes the open pull request of its
// branch: the base already pins what was promoted.
func closeComment(base string, promoted []ImageMeta, open *Meta) string {
	what := "its proposal"
	if open != nil && len(open.Images) > 0 {
		what = "its proposal (" + describeImages(open.Images) + ")"
	}
	return fmt.Sprintf("pinbot closes this pull request: the %s branch already pins %s, so %s is obsolete.",
		base, describeImages(promoted), what)
}

func describeImages(ims []ImageMeta) string {
	s := ""
	for i, im := range ims {
		if i > 0 {
			s += ", "
		}
		s += im.Image + " " + Ref(im.Tag, im.Digest)
	}
	return s
}

// publish creates or edits the one open pull request of the branch after
// head was pushed to it. The branch is the serialisation point: the text
// is written only while the pull request's head is head, and checked again
// afterwards; a later push owns the text.
//
// known is the branch's open pull request as seen before the push (nil
// when there was none): the first round reads just that one again, or
// creates one, instead of listing every open pull request.
func (s *session) publish(ctx context.Context, j job, known *gitforge.Pull, head, title, body string) (*gitforge.Pull, Status, error) {
	log := logctx.From(ctx).With("branch", j.branch)
	repo := s.env.Repo
	status := StatusUpdated
	var pr *gitforge.Pull
	for round := 1; ; round++ {
		if round > 5 {
			return pr, status, fmt.Errorf("writing pull request of %s: its text kept changing under pinbot", j.branch)
		}
		var open *gitforge.Pull
		var err error
		switch {
		case round == 1 && known == nil:
			// Most likely none: create it, and look only if that fails.
		case round == 1:
			if open, err = s.env.Forge.GetPull(ctx, repo, known.Number); err == nil && open.State != gitforge.StateOpen {
				open, err = s.env.Forge.OpenPull(ctx, repo, j.branch) // merged or closed meanwhile
			}
		default:
			open, err = s.env.Forge.OpenPull(ctx, repo, j.branch)
		}
		if err != nil {
			return nil, "", fmt.Errorf("finding the open pull request of %s: %w", j.branch, err)
		}
		switch {
		case open == nil:
			pr, err = s.env.Forge.CreatePull(ctx, repo, gitforge.Pull{Head: j.branch, Base: s.base, Title: title, Body: body})
			if err != nil {
				// Another promotion may have created it meanwhile: look again.
				again, lookErr := s.env.Forge.OpenPull(ctx, repo, j.branch)
				if lookErr == nil && again != nil {
					log.Debug("lost the race to create the pull request", "number", again.Number)
					continue
				}
				return nil, "", fmt.Errorf("creating a pull request for %s: %w", j.branch, err)
			}
			status = StatusOpened
			log.Info("opened pull request", "number", pr.Number)
			s.env.reached(PhasePullOpened)
			if len(s.cfg.Reviewers) > 0 {
				if err := s.env.Forge.RequestReviewers(ctx, repo, pr.Number, s.cfg.Reviewers); err != nil {
					return pr, status, fmt.Errorf("requesting reviewers on #%d: %w", pr.Number, err)
				}
			}
		case open.HeadSHA != head:
			stale, err := s.staleHead(ctx, j, open.Number, head)
			if err != nil {
				return nil, "", err
			}
			if stale {
				continue
			}
			log.Info("a later promotion replaced the branch; leaving the text to it", "number", open.Number, "head", open.HeadSHA)
			return open, StatusSuperseded, nil
		case open.Title != title || open.Body != body:
			pr, err = s.env.Forge.EditPull(ctx, repo, open.Number, title, body)
			if err != nil {
				return nil, "", fmt.Errorf("editing pull request #%d: %w", open.Number, err)
			}
			log.Info("updated pull request", "number", open.Number)
		default:
			pr = open
		}
		if len(s.cfg.Labels) > 0 {
			if err := s.env.Forge.AddLabels(ctx, repo, pr.Number, s.cfg.Labels); err != nil {
				return pr, status, fmt.Errorf("labelling #%d: %w", pr.Number, err)
			}
		}
		// Check that the text written matches the branch head.
		now, err := s.env.Forge.GetPull(ctx, repo, pr.Number)
		if err != nil {
			return pr, status, fmt.Errorf("re-reading pull request #%d: %w", pr.Number, err)
		}
		switch {
		case now.State != gitforge.StateOpen:
			return now, status, nil // merged or closed meanwhile: nothing left to fix
		case now.HeadSHA != head:
			stale, err := s.staleHead(ctx, j, now.Number, head)
			if err != nil {
				return now, status, err
			}
			if stale {
				continue
			}
			return now, StatusSuperseded, nil
		case now.Title != title || now.Body != body:
			log.Debug("pull request text was overwritten by an earlier promotion; writing it again", "number", now.Number)
			continue
		}
		return now, status, nil
	}
}

// staleHead reports whether the pull request number only shows an older
// head than the one this promotion pushed: Gitea records a pushed head in
// its pull request asynchronously, and later under load. While Git says
// the branch is still at head, it waits (up to 30 s) for the pull request
// to show it, and reports true once it does, so the caller looks again. It
// reports false when Git has a later head: another promotion replaced the
// branch. Only Git's answer tells a stale view from a later promotion.
func (s *session) staleHead(ctx context.Context, j job, number int64, head string) (bool, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		now, err := gitforge.RemoteHead(ctx, s.env.CloneURL, j.branch, s.env.Auth)
		if err != nil {
			return false, fmt.Errorf("reading the head of %s: %w", j.branch, err)
		}
		if now != head {
			return false, nil
		}
		pr, err := s.env.Forge.GetPull(ctx, s.env.Repo, number)
		if err != nil {
			return false, fmt.Errorf("re-reading pull request #%d: %w", number, err)
		}
		if pr.HeadSHA == head {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		logctx.From(ctx).Debug("the pull request does not show the pushed head yet; waiting", "branch", j.branch, "head", head)
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
