package promote

import (
	"context"
	"fmt"
	"slices"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/promote/pr"
)

// closeComment explains why a promotion closes the open pull request of its
// branch: the base already pins what was promoted.
func closeComment(base string, promoted []pr.ImageMeta, open *pr.Meta) string {
	what := "its proposal"
	if open != nil && len(open.Images) > 0 {
		what = "its proposal (" + pr.DescribeImages(open.Images) + ")"
	}
	return fmt.Sprintf("pinbot closes this pull request: the %s branch already pins %s, so %s is obsolete.",
		base, pr.DescribeImages(promoted), what)
}

// publish creates or edits the one open pull request of the branch after
// head was pushed to it. The branch is the serialisation point: the text
// is written only while Git says the branch is at head, and checked again
// afterwards; a later push owns the text. (Git's answer, not the pull
// request's head: Gitea records a pushed head in its pull request
// asynchronously, and waiting for it cost a quarter of a second.)
//
// known is the branch's open pull request as seen before the push (nil
// when there was none): the first round writes to just that one, or
// creates one, instead of looking again. branchHead is the branch's head
// read after the push.
func (s *session) publish(ctx context.Context, j job, known *gitforge.Pull, head, branchHead, title, body string) (*gitforge.Pull, Status, error) {
	log := logctx.From(ctx).With("branch", j.branch)
	repo := s.env.Repo
	status := StatusUpdated
	gitHead := func() (string, error) {
		if branchHead != "" {
			h := branchHead
			branchHead = "" // read again next time
			return h, nil
		}
		h, err := gitforge.RemoteHead(ctx, s.env.CloneURL, j.branch, s.env.Auth)
		if err != nil {
			return "", fmt.Errorf("reading the head of %s: %w", j.branch, err)
		}
		return h, nil
	}
	var pull *gitforge.Pull
	for round := 1; ; round++ {
		if round > 5 {
			return pull, status, fmt.Errorf("writing pull request of %s: its text kept changing under pinbot", j.branch)
		}
		now, err := gitHead()
		if err != nil {
			return nil, "", err
		}
		if now != head {
			log.Info("a later promotion replaced the branch; leaving the text to it", "head", now)
			return known, StatusSuperseded, nil
		}
		open := known // round 1; nil: most likely none; create it, and look only if that fails
		if round > 1 {
			if open, err = s.openOf(ctx, j); err != nil {
				return nil, "", err
			}
		}
		switch {
		case open == nil:
			pull, err = s.env.Forge.CreatePull(ctx, repo, gitforge.Pull{Head: j.branch, Base: s.base, Title: title, Body: body})
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
			log.Info("opened pull request", "number", pull.Number)
			s.env.reached(phasePullOpened)
			if len(s.cfg.Reviewers) > 0 {
				if err := s.env.Forge.RequestReviewers(ctx, repo, pull.Number, s.cfg.Reviewers); err != nil {
					return pull, status, fmt.Errorf("requesting reviewers on #%d: %w", pull.Number, err)
				}
			}
		default:
			// Written even when it reads the same: a known pull request
			// may be stale, and an edit of the same text is harmless.
			if pull, err = s.env.Forge.EditPull(ctx, repo, open.Number, title, body); err != nil {
				return nil, "", fmt.Errorf("editing pull request #%d: %w", open.Number, err)
			}
			if pull.State != gitforge.StateOpen {
				continue // merged or closed meanwhile: look for an open one
			}
			log.Info("updated pull request", "number", open.Number)
		}
		if err := s.label(ctx, j, pull); err != nil {
			return pull, status, err
		}
		// Check that the text stands and the branch is still at head: a
		// promotion that pushed earlier may have written its text late.
		// Both reads at once.
		headRead := make(chan error, 1)
		go func() {
			var err error
			now, err = gitHead()
			headRead <- err
		}()
		got, err := s.env.Forge.GetPull(ctx, repo, pull.Number)
		headErr := <-headRead
		if err != nil {
			return pull, status, fmt.Errorf("re-reading pull request #%d: %w", pull.Number, err)
		}
		if headErr != nil {
			return got, status, headErr
		}
		switch {
		case got.State != gitforge.StateOpen:
			return got, status, nil // merged or closed meanwhile: nothing left to fix
		case now != head:
			return got, StatusSuperseded, nil
		case got.Title != title || got.Body != body:
			log.Debug("pull request text was overwritten by an earlier promotion; writing it again", "number", got.Number)
			continue
		}
		return got, status, nil
	}
}

// openOf is the open pull request of j's branch, nil for none. One
// someone else opened from pinbot's branch since pinbot looked is closed
// as carryOut closes one, never edited into pinbot's.
func (s *session) openOf(ctx context.Context, j job) (*gitforge.Pull, error) {
	repo := s.env.Repo
	open, err := s.env.Forge.OpenPull(ctx, repo, j.branch)
	if err != nil || open == nil {
		if err != nil {
			err = fmt.Errorf("finding the open pull request of %s: %w", j.branch, err)
		}
		return nil, err
	}
	mine, err := s.mine(ctx, open)
	if err != nil || mine {
		return open, err
	}
	if err := s.env.Forge.ClosePull(ctx, repo, open.Number, foreignComment(j.branch, open.Author)); err != nil {
		return nil, fmt.Errorf("closing #%d, which another account opened from pinbot's branch %s: %w", open.Number, j.branch, err)
	}
	return nil, nil
}

// label puts the config's labels on pull, and a rollback's label on a
// rollback's.
func (s *session) label(ctx context.Context, j job, pull *gitforge.Pull) error {
	labels := s.cfg.Labels
	if j.rollback != nil {
		labels = append(slices.Clone(labels), pr.RollbackLabel)
	}
	if len(labels) == 0 {
		return nil
	}
	if err := s.env.Forge.AddLabels(ctx, s.env.Repo, pull.Number, labels); err != nil {
		return fmt.Errorf("labelling #%d: %w", pull.Number, err)
	}
	return nil
}
