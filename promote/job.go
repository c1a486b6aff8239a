package promote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust/policy"
)

// job is one branch's worth of promotion: the digests it proposes for the
// pins of one target (or of every target, for a grouped drift pull
// request).
type job struct {
	target string // "" for every target
	branch string
	proms  []jobPromotion
	// obsolete says whether an open pull request on the branch, whose
	// hidden block is open (nil when unreadable), is to be closed when the
	// base needs no change, and with which comment.
	obsolete func(open *pr.Meta) (bool, string)
	// listed, when set, is the branch's open pull request (nil for none)
	// from a listing made at the start of the run: the first attempt uses
	// it instead of asking again.
	listed *listedPull
	// checkOrder holds back a promotion older than what the base pins or
	// the open pull request proposes (see Superseded).
	checkOrder bool
	// proofs, group, rollback and forced go into the body: the upstream
	// proofs of an onward promotion, the group its images move as, the
	// failure a rollback undoes, and why a promotion was forced past the
	// gate.
	proofs   []*release.Proof
	group    string
	rollback *Rollback
	forced   string
}

// listedPull is a pull request lookup done ahead of time.
type listedPull struct{ pull *gitforge.Pull }

// jobPromotion is one digest of a job and the pins it may change.
type jobPromotion struct {
	Promotion
	// tag is written into changed pins that carry a tag; "" keeps tags.
	tag string
	// key is the tag drift followed to this digest.
	key tagKey
	// match selects the pins this promotion may change.
	match  func(pins.Pin) bool
	choose ChooseOptions
}

// meta returns the job's Meta before anything is applied.
func (j job) meta() pr.Meta {
	m := pr.Meta{Version: pr.MetaVersion, Target: j.target}
	if j.rollback != nil {
		m.Kind = pr.KindRollback
	}
	for _, p := range j.proms {
		m.Images = append(m.Images, pr.ImageMeta{Image: p.Image, Digest: p.Digest, Tag: p.Tag, Source: p.Source})
	}
	return m
}

// apply computes the job's rewrites of the base's pins and returns the
// changes and notes for reviewers, and the new content of each changed
// file. Every pin's digest is chosen first (see chooseDigests); pins then
// rewrites from that table, reading the base's blobs. Nothing is written.
func (s *session) apply(ctx context.Context, j job) ([]pr.ChangeRecord, []string, map[string][]byte, error) {
	var changes []pr.ChangeRecord
	var notes []string
	tree := overlay{base: s.snap.FS(), files: map[string][]byte{}}
	for _, p := range j.proms {
		var chosen []pins.Pin
		files := map[string]bool{}
		for _, pin := range s.pins {
			if pin.Image == p.Image && !pin.Ignored && p.match(pin) {
				chosen = append(chosen, pin)
				files[pin.File] = true
			}
		}
		if len(chosen) == 0 {
			continue
		}
		// A digest belongs to one tag variant: pins of another are left
		// alone, and said so; no tag and several variants is refused.
		chosen, skipped, err := pins.Decide(pins.Update{Image: p.Image, Digest: p.Digest, Tag: p.tag, AnyVariant: p.choose.AnyVariant}, chosen)
		if err != nil {
			return nil, nil, nil, err
		}
		notes = append(notes, skipNotes(skipped)...)
		if len(chosen) == 0 {
			continue
		}
		clear(files)
		for _, pin := range chosen {
			files[pin.File] = true
		}
		table, pnotes, err := s.chooseDigests(ctx, chosen, p)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("choosing digests for the pins of %s: %w", p.Image, err)
		}
		notes = append(notes, pnotes...)
		u := pins.Update{
			Image:      p.Image,
			Tag:        p.tag,
			AnyVariant: p.choose.AnyVariant,
			Include:    func(file string) bool { return files[file] },
			Digests:    table,
		}
		got, edits, err := pins.Edit(ctx, tree, u)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("rewriting pins of %s: %w", p.Image, err)
		}
		for _, f := range edits {
			tree.files[f.Path] = f.Data
		}
		for _, c := range got {
			changes = append(changes, pr.ChangeRecord{
				File: c.File, Line: c.Line, Kind: string(c.Kind), Image: c.Image,
				OldDigest: c.OldDigest, NewDigest: c.NewDigest, OldTag: c.OldTag, NewTag: c.NewTag,
				Before: c.Before, After: c.After,
			})
		}
	}
	sort.SliceStable(changes, func(a, b int) bool {
		if changes[a].File != changes[b].File {
			return changes[a].File < changes[b].File
		}
		return changes[a].Line < changes[b].Line
	})
	slices.Sort(notes)
	return changes, slices.Compact(notes), tree.files, nil
}

// skipNotes describes, a line each, the pins a promotion left alone for
// their tag.
func skipNotes(skipped []pins.Skip) []string {
	out := make([]string, len(skipped))
	for i, sk := range skipped {
		tag := sk.Tag
		if tag == "" {
			tag = "-"
		}
		out[i] = fmt.Sprintf("skipped %s:%d (tag %s): %s", sk.File, sk.Line, tag, sk.Reason)
	}
	return out
}

// chooseDigests asks the registry, at most DefaultConcurrency pins at
// once, which digest each pin gets when p is promoted (see Choose), and
// returns them as the lookup table pins.Set takes, with the notes for
// reviewers. The first error stops the others.
func (s *session) chooseDigests(ctx context.Context, chosen []pins.Pin, p jobPromotion) (map[pins.PinKey]string, []string, error) {
	digests := make([]string, len(chosen))
	notes := make([]string, len(chosen))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DefaultConcurrency)
	for i, pin := range chosen {
		g.Go(func() error {
			d, note, err := s.chooser.digestFor(gctx, pin, p.Promotion, p.choose)
			digests[i], notes[i] = d, note
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	table := make(map[pins.PinKey]string, len(chosen))
	var out []string
	for i, pin := range chosen {
		table[pin.Key()] = digests[i]
		if notes[i] != "" {
			out = append(out, notes[i])
		}
	}
	return table, out, nil
}

// runJob brings one branch and its pull request to what the job proposes
// on the current base. An attempt after the first (a rejected push, a
// base that moved) fetches the base again.
func (s *session) runJob(ctx context.Context, j job, dryRun bool) (Result, error) {
	log := logctx.From(ctx).With("branch", j.branch)
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
		if err := s.scan(ctx); err != nil {
			return res, err
		}
		// The pull request is looked up while the pins are rewritten and
		// the commit is built: neither depends on the other.
		lookup := s.lookupPull(ctx, j, attempt)
		start := time.Now()
		changes, notes, files, err := s.apply(ctx, j)
		if err != nil {
			return res, err
		}
		took(ctx, "rewrote pins", start, "branch", j.branch, "changes", len(changes))
		meta := j.meta()
		meta.Base, meta.Changes = s.snap.Commit(), changes
		res.Meta, res.Notes = meta, notes
		var commit func() (*gitforge.Snapshot, error)
		if len(changes) > 0 && !dryRun {
			commit = s.commitOnce(ctx, j, meta, files)
		}

		open, mine, err := lookup()
		if err != nil {
			return res, fmt.Errorf("finding the open pull request of %s: %w", j.branch, err)
		}
		readying := j.rollback != nil && j.rollback.Ready
		if readying && open != nil && mine {
			res.Status, res.Pull = StatusSkipped, open
			res.Notes = append(notes, fmt.Sprintf("#%d is open on %s: the rollback is not readied over it", open.Number, j.branch))
			return res, nil
		}
		// Another account's text on pinbot's branch is not pinbot's word:
		// what it claims to propose is not read.
		var openMeta *pr.Meta
		if open != nil && mine {
			if m, err := pr.ParseBody(open.Body); err == nil {
				openMeta = &m
			}
		}

		if j.checkOrder && len(changes) > 0 {
			var number int64
			if open != nil {
				number = open.Number
			}
			note, older, err := s.superseded(ctx, j, openMeta, number)
			if err != nil {
				return res, err
			}
			if older {
				res.Status, res.Pull, res.Notes = StatusSuperseded, open, append(notes, note)
				res.Meta.Changes = nil
				log.Info("a newer build is pinned or proposed; nothing written", "reason", note)
				return res, nil
			}
		}
		obsolete := func(m *pr.Meta) bool { ok, _ := j.obsolete(m); return ok }
		var planOpen *pr.Open
		if open != nil {
			planOpen = &pr.Open{Head: open.HeadSHA, Meta: openMeta, Mine: mine}
		}
		action := pr.Plan(meta, planOpen, obsolete)
		if action == pr.ActionKeep {
			if commit == nil {
				commit = s.commitOnce(ctx, j, meta, files)
			}
			same, err := s.headIsPlanned(ctx, j.branch, open.HeadSHA, commit)
			if err != nil {
				return res, err
			}
			if !same {
				log.Warn("the pull request's head is not the commit pinbot would push; pushing it again", "number", open.Number, "head", open.HeadSHA)
				action = pr.ActionPush
			}
		}
		switch action {
		case pr.ActionNone:
			res.Status = StatusAlreadyPinned
			return res, nil
		case pr.ActionLeave:
			res.Status, res.Pull = StatusAlreadyPinned, open
			return res, nil
		case pr.ActionClose:
			res.Status, res.Closed = StatusAlreadyPinned, open
			if !dryRun {
				_, comment := j.obsolete(openMeta)
				if err := s.env.Forge.ClosePull(ctx, s.env.Repo, open.Number, comment); err != nil {
					return res, fmt.Errorf("closing obsolete pull request #%d: %w", open.Number, err)
				}
				log.Info("closed obsolete pull request", "number", open.Number)
			}
			return res, nil
		case pr.ActionKeep:
			res.Status, res.Pull, res.Meta, res.Body = StatusUnchanged, open, *openMeta, open.Body
			res.Diff = pr.RenderDiff(changes)
			return res, nil
		}

		proposal := s.proposal(j, meta, notes)
		res.Diff = pr.RenderDiff(changes)
		if dryRun {
			res.Status, res.Pull, res.Body = StatusDryRun, open, pr.RenderBody(proposal)
			return res, nil
		}

		if commit == nil {
			commit = s.commitOnce(ctx, j, meta, files)
		}
		edited, err := commit()
		if err != nil {
			return res, err
		}
		if open != nil && !mine {
			// The branch is pinbot's: a pull request someone else opened
			// from it is closed before pinbot's commit replaces its head,
			// and pinbot opens its own.
			if err := s.env.Forge.ClosePull(ctx, s.env.Repo, open.Number, foreignComment(j.branch, open.Author)); err != nil {
				return res, fmt.Errorf("closing #%d, which another account opened from pinbot's branch %s: %w", open.Number, j.branch, err)
			}
			log.Warn("closed a pull request another account opened from pinbot's branch", "number", open.Number, "author", open.Author)
			open = nil
		}
		head := edited.Commit()
		s.env.reached(phaseCommitted)
		start = time.Now()
		pushErr := edited.Push(ctx, j.branch, true, s.env.Auth)
		took(ctx, "pushed", start, "branch", j.branch)
		if errors.Is(pushErr, gitforge.ErrPushRejected) && attempt < s.env.Attempts {
			log.Info("push rejected; regenerating from a fresh base", "attempt", attempt)
			continue
		}
		if pushErr != nil {
			return res, pushErr
		}
		s.env.reached(phasePushed)
		start = time.Now()
		// Has the base moved? One round trip reads the branch's head too,
		// which the pull request's text is checked against.
		heads, err := gitforge.RemoteHeads(ctx, s.env.CloneURL, s.env.Auth, s.base, j.branch)
		if err != nil {
			return res, fmt.Errorf("reading the base branch %s after pushing %s: %w", s.base, j.branch, err)
		}
		newBase := heads[s.base]
		took(ctx, "read the base head", start, "base", newBase)
		if newBase != meta.Base && attempt < s.env.Attempts {
			log.Info("base branch moved during the promotion; regenerating", "base", s.base, "from", meta.Base, "to", newBase)
			continue
		}
		meta.Head = head
		if readying {
			res.Status, res.Meta = StatusReadied, meta
			log.Info("readied the rollback branch; no pull request opened", "head", head)
			return res, nil
		}
		proposal.Meta = meta
		res.Meta, res.Body = meta, pr.RenderBody(proposal)
		start = time.Now()
		res.Pull, res.Status, err = s.publish(ctx, j, open, head, heads[j.branch], pr.Title(meta), res.Body)
		took(ctx, "published", start, "status", string(res.Status))
		return res, err
	}
}

// lookupPull starts looking up the open pull request of the job's branch
// (on the first attempt, the one listed at the start of the run stands)
// and returns a function that waits for the answer, and for whether the
// account promotions run as opened it.
func (s *session) lookupPull(ctx context.Context, j job, attempt int) func() (*gitforge.Pull, bool, error) {
	type answer struct {
		pull *gitforge.Pull
		mine bool
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		var a answer
		if j.listed != nil && attempt == 1 {
			a.pull = j.listed.pull
		} else {
			a.pull, a.err = s.env.Forge.OpenPull(ctx, s.env.Repo, j.branch)
		}
		if a.err == nil && a.pull != nil {
			a.mine, a.err = s.mine(ctx, a.pull)
		}
		ch <- a
	}()
	return func() (*gitforge.Pull, bool, error) { a := <-ch; return a.pull, a.mine, a.err }
}

// mine reports whether the account promotions run as opened p.
func (s *session) mine(ctx context.Context, p *gitforge.Pull) (bool, error) {
	self, err := s.env.Forge.Self(ctx)
	if err != nil {
		return false, err
	}
	return p.Author == self, nil
}

// headIsPlanned reports whether head, the head of pinbot's open pull
// request, is the commit pinbot would push now: one parent, the base, and
// the planned tree. Whoever may write to the repository may push to
// pinbot's branch and edit the text to match, so the commit itself is
// compared. A head pinbot pushed from this store is read from it; any
// other is fetched. A head on an older base is pushed again, on the
// current one.
func (s *session) headIsPlanned(ctx context.Context, branch, head string, commit func() (*gitforge.Snapshot, error)) (bool, error) {
	planned, err := commit()
	if err != nil {
		return false, err
	}
	got, err := s.repo.FetchCommit(ctx, branch, head, s.env.Auth)
	if err != nil {
		return false, fmt.Errorf("reading the head %s of the open pull request: %w", head, err)
	}
	parents, err := got.Parents()
	if err != nil {
		return false, err
	}
	return got.Tree() == planned.Tree() && slices.Equal(parents, []string{s.snap.Commit()}), nil
}

// foreignComment explains why pinbot closes a pull request another
// account opened from one of pinbot's branches.
func foreignComment(branch, author string) string {
	return fmt.Sprintf("pinbot closes this pull request: %s is one of pinbot's branches, and this pull request was opened by %s, "+
		"not by pinbot's account. pinbot pushes its own commit to the branch and opens its own pull request; "+
		"propose a change of your own from another branch.", "`"+branch+"`", "`"+author+"`")
}

// commitOnce commits files, the rewritten pins of meta, on top of the
// base now and returns a function that gives the commit (or the error).
// The commit is in the local store only until it is pushed.
func (s *session) commitOnce(ctx context.Context, j job, meta pr.Meta, files map[string][]byte) func() (*gitforge.Snapshot, error) {
	when := s.env.Now()
	if j.rollback != nil && !j.rollback.At.IsZero() {
		// Git keeps whole seconds: the readied branch's commit and the
		// rollback's are the same.
		when = j.rollback.At.UTC().Truncate(time.Second)
	}
	author := gitforge.Signature{Name: s.cfg.Author.Name, Email: s.cfg.Author.Email, When: when}
	start := time.Now()
	edited, err := s.snap.Edit(files, pr.CommitMessage(meta), author)
	if err != nil {
		err = fmt.Errorf("committing on %s: %w", s.base, err)
	} else {
		took(ctx, "committed", start, "commit", edited.Commit())
	}
	return func() (*gitforge.Snapshot, error) { return edited, err }
}

func (s *session) proposal(j job, meta pr.Meta, notes []string) pr.Proposal {
	p := pr.Proposal{Meta: meta, Facts: map[string]pr.Facts{}, Files: map[string]string{}, Notes: notes,
		Proofs: j.proofs, Group: j.group, Forced: j.forced, Policy: ConfigFile}
	if rb := j.rollback; rb != nil {
		p.Rollback = &pr.Undone{Failed: rb.Failed, Evidence: rb.Evidence}
	}
	for _, jp := range j.proms {
		f := factsOf(jp.Described)
		f.Trust = jp.Trust
		p.Facts[jp.Image] = f
		if jp.File != "" {
			p.Files[jp.Image] = jp.File
		}
	}
	return p
}
