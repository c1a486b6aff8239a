package promote

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
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
