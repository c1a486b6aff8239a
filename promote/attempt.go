package promote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/trust/policy"
)

// runJob brings one branch and its pull request to what the job proposes
// on the current base: attempt after attempt, each planning on a base it
// fetched again (a rejected push, a base that moved) and carrying out
// its plan.
func (s *session) runJob(ctx context.Context, j job, dryRun bool) (Result, error) {
	res := Result{Target: j.target, Branch: j.branch}
	for _, jp := range j.proms {
		if jp.Trust != nil {
			if res.Signatures == nil {
				res.Signatures = map[string]policy.Provenance{}
			}
			res.Signatures[jp.Image] = *jp.Trust
		}
	}
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			if err := s.fetch(ctx); err != nil {
				return res, fmt.Errorf("fetching the base branch %s again: %w", s.base, err)
			}
		}
		p, done, err := s.planJob(ctx, j, dryRun, attempt, &res)
		if err != nil || done {
			return res, err
		}
		again, err := s.carryOut(ctx, j, p, dryRun, attempt, &res)
		if !again {
			return res, err
		}
	}
}

// jobPlan is one attempt's plan: what the job pins on the base as it is
// now, the branch's open pull request, and what to do with them.
type jobPlan struct {
	meta     pr.Meta
	changes  []pr.ChangeRecord
	notes    []string
	files    map[string][]byte
	commit   func() (*gitforge.Snapshot, error) // nil until one is needed
	open     *gitforge.Pull
	mine     bool     // open is pinbot's own
	openMeta *pr.Meta // what pinbot's own open pull request proposes
	action   pr.Action
}

// planJob rewrites the pins on the base as fetched and decides, against
// the branch's open pull request, what the attempt does. done says res
// is final already: a readied rollback not laid over an open one, or a
// newer build pinned or proposed.
func (s *session) planJob(ctx context.Context, j job, dryRun bool, attempt int, res *Result) (*jobPlan, bool, error) {
	log := logctx.From(ctx).With("branch", j.branch)
	if err := s.scan(ctx); err != nil {
		return nil, false, err
	}
	// The pull request is looked up while the pins are rewritten and the
	// commit is built: neither depends on the other.
	lookup := s.lookupPull(ctx, j, attempt)
	start := time.Now()
	p := &jobPlan{}
	var err error
	if p.changes, p.notes, p.files, err = s.apply(ctx, j); err != nil {
		return nil, false, err
	}
	took(ctx, "rewrote pins", start, "branch", j.branch, "changes", len(p.changes))
	p.meta = j.meta()
	p.meta.Base, p.meta.Changes = s.snap.Commit(), p.changes
	res.Meta, res.Notes = p.meta, p.notes
	if len(p.changes) > 0 && !dryRun {
		p.commit = s.commitOnce(ctx, j, p.meta, p.files)
	}
	if p.open, p.mine, err = lookup(); err != nil {
		return nil, false, fmt.Errorf("finding the open pull request of %s: %w", j.branch, err)
	}
	if j.rollback != nil && j.rollback.Ready && p.open != nil && p.mine {
		res.Status, res.Pull = StatusSkipped, p.open
		res.Notes = append(p.notes, fmt.Sprintf("#%d is open on %s: the rollback is not readied over it", p.open.Number, j.branch))
		return nil, true, nil
	}
	// Another account's text on pinbot's branch is not pinbot's word:
	// what it claims to propose is not read.
	if p.open != nil && p.mine {
		if m, err := pr.ParseBody(p.open.Body); err == nil {
			p.openMeta = &m
		}
	}
	if j.checkOrder && len(p.changes) > 0 {
		var number int64
		if p.open != nil {
			number = p.open.Number
		}
		note, older, err := s.superseded(ctx, j, p.openMeta, number)
		if err != nil {
			return nil, false, err
		}
		if older {
			res.Status, res.Pull, res.Notes = StatusSuperseded, p.open, append(p.notes, note)
			res.Meta.Changes = nil
			log.Info("a newer build is pinned or proposed; nothing written", "reason", note)
			return nil, true, nil
		}
	}
	obsolete := func(m *pr.Meta) bool { ok, _ := j.obsolete(m); return ok }
	var planOpen *pr.Open
	if p.open != nil {
		planOpen = &pr.Open{Head: p.open.HeadSHA, Meta: p.openMeta, Mine: p.mine}
	}
	p.action = pr.Plan(p.meta, planOpen, obsolete)
	if p.action == pr.ActionKeep {
		if p.commit == nil {
			p.commit = s.commitOnce(ctx, j, p.meta, p.files)
		}
		same, err := s.headIsPlanned(ctx, j.branch, p.open.HeadSHA, p.commit)
		if err != nil {
			return nil, false, err
		}
		if !same {
			log.Warn("the pull request's head is not the commit pinbot would push; pushing it again", "number", p.open.Number, "head", p.open.HeadSHA)
			p.action = pr.ActionPush
		}
	}
	return p, false, nil
}

// carryOut does what plan p says: leave, close or keep the open pull
// request, or commit, push and publish. again asks for another attempt on
// a fresh base: the push was rejected, or the base moved meanwhile.
func (s *session) carryOut(ctx context.Context, j job, p *jobPlan, dryRun bool, attempt int, res *Result) (again bool, err error) {
	log := logctx.From(ctx).With("branch", j.branch)
	open := p.open
	switch p.action {
	case pr.ActionNone:
		res.Status = StatusAlreadyPinned
		return false, nil
	case pr.ActionLeave:
		res.Status, res.Pull = StatusAlreadyPinned, open
		return false, nil
	case pr.ActionClose:
		res.Status, res.Closed = StatusAlreadyPinned, open
		if !dryRun {
			_, comment := j.obsolete(p.openMeta)
			if err := s.env.Forge.ClosePull(ctx, s.env.Repo, open.Number, comment); err != nil {
				return false, fmt.Errorf("closing obsolete pull request #%d: %w", open.Number, err)
			}
			log.Info("closed obsolete pull request", "number", open.Number)
		}
		return false, nil
	case pr.ActionKeep:
		res.Status, res.Pull, res.Meta, res.Body = StatusUnchanged, open, *p.openMeta, open.Body
		res.Diff = pr.RenderDiff(p.changes)
		return false, nil
	}
	proposal := s.proposal(j, p.meta, p.notes)
	res.Diff = pr.RenderDiff(p.changes)
	if dryRun {
		res.Status, res.Pull, res.Body = StatusDryRun, open, pr.RenderBody(proposal)
		return false, nil
	}
	if p.commit == nil {
		p.commit = s.commitOnce(ctx, j, p.meta, p.files)
	}
	edited, err := p.commit()
	if err != nil {
		return false, err
	}
	if open != nil && !p.mine {
		// The branch is pinbot's: a pull request someone else opened from
		// it is closed before pinbot's commit replaces its head, and
		// pinbot opens its own.
		if err := s.env.Forge.ClosePull(ctx, s.env.Repo, open.Number, foreignComment(j.branch, open.Author)); err != nil {
			return false, fmt.Errorf("closing #%d, which another account opened from pinbot's branch %s: %w", open.Number, j.branch, err)
		}
		log.Warn("closed a pull request another account opened from pinbot's branch", "number", open.Number, "author", open.Author)
		open = nil
	}
	head := edited.Commit()
	s.env.reached(phaseCommitted)
	start := time.Now()
	pushErr := edited.Push(ctx, j.branch, true, s.env.Auth)
	took(ctx, "pushed", start, "branch", j.branch)
	if errors.Is(pushErr, gitforge.ErrPushRejected) && attempt < s.env.Attempts {
		log.Info("push rejected; regenerating from a fresh base", "attempt", attempt)
		return true, nil
	}
	if pushErr != nil {
		return false, pushErr
	}
	s.env.reached(phasePushed)
	start = time.Now()
	// Has the base moved? One round trip reads the branch's head too,
	// which the pull request's text is checked against.
	heads, err := gitforge.RemoteHeads(ctx, s.env.CloneURL, s.env.Auth, s.base, j.branch)
	if err != nil {
		return false, fmt.Errorf("reading the base branch %s after pushing %s: %w", s.base, j.branch, err)
	}
	newBase := heads[s.base]
	took(ctx, "read the base head", start, "base", newBase)
	if newBase != p.meta.Base && attempt < s.env.Attempts {
		log.Info("base branch moved during the promotion; regenerating", "base", s.base, "from", p.meta.Base, "to", newBase)
		return true, nil
	}
	meta := p.meta
	meta.Head = head
	if j.rollback != nil && j.rollback.Ready {
		res.Status, res.Meta = StatusReadied, meta
		log.Info("readied the rollback branch; no pull request opened", "head", head)
		return false, nil
	}
	proposal.Meta = meta
	res.Meta, res.Body = meta, pr.RenderBody(proposal)
	start = time.Now()
	res.Pull, res.Status, err = s.publish(ctx, j, open, head, heads[j.branch], pr.Title(meta), res.Body)
	took(ctx, "published", start, "status", string(res.Status))
	return false, err
}
