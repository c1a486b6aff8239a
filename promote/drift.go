package promote

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/trust"
)

// DefaultConcurrency bounds drift's registry lookups in flight.
const DefaultConcurrency = 8

// DriftOptions tune one drift run.
type DriftOptions struct {
	// MinAge, when not nil, overrides .pinbot.yaml's drift.minAge.
	MinAge *time.Duration
	// Group, when set, overrides .pinbot.yaml's drift.group.
	Group Group
	// State measures digest ages (see Age); nil falls back to created
	// times.
	State *State
	// Concurrency bounds the tags resolved at once; default
	// DefaultConcurrency. The registry client's own per-host limit,
	// retries and rate limiting apply beneath it.
	Concurrency int
	// Choose tunes how each pin's digest is chosen.
	Choose ChooseOptions
	// DryRun resolves and renders but pushes, edits and closes nothing.
	DryRun bool
	// Admitter admits each moved digest into each environment it would go
	// to (a hold refuses it); nil admits all. With environments, drift
	// proposes only into the first ones: the rest take what is proven.
	Admitter Admitter
	// Policy, when set, is a signature policy checked besides the
	// repository's own (see Request.Policy).
	Policy *trust.Verifier
}

// Tracked is one repository tag that pins follow.
type Tracked struct {
	Image, Tag string
	// Digest is what the tag points at now ("" when it failed).
	Digest string
	// Age is how long Digest has been behind the tag, when AgeKnown.
	Age      time.Duration
	AgeKnown bool
	// Targets holds the targets whose pins moved with the tag.
	Targets []string
}

// Failure is one image (or branch) drift could not handle.
type Failure struct {
	Image, Tag string // the tag that failed to resolve, if any
	Branch     string // the branch that failed to publish, if any
	Err        error
}

// Error returns the failure's message.
func (f Failure) Error() string { return f.Err.Error() }

// Unwrap returns the underlying error.
func (f Failure) Unwrap() error { return f.Err }

// DriftReport is what one drift run found and did.
type DriftReport struct {
	// Checked counts the distinct repository tags resolved.
	Checked int
	// Moved are the tags whose digest moved and were promoted; Held moved
	// too recently (within the stabilisation window).
	Moved, Held []Tracked
	// Failed are the tags and branches that failed; the others went on.
	Failed []Failure
	// Results are the branches touched, in order.
	Results []Result
}

// Count returns how many Results have status st.
func (r DriftReport) Count(st Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == st {
			n++
		}
	}
	return n
}

// Closed counts the pull requests closed as obsolete.
func (r DriftReport) Closed() int {
	n := 0
	for _, res := range r.Results {
		if res.Closed != nil {
			n++
		}
	}
	return n
}

// Summary is the one-line summary of a run.
func (r DriftReport) Summary() string {
	tags := "tags"
	if r.Checked == 1 {
		tags = "tag"
	}
	return fmt.Sprintf("drift: checked %d %s, %d moved, %d held; pull requests: %d opened, %d updated, %d unchanged, %d closed; %d failed",
		r.Checked, tags, len(r.Moved), len(r.Held),
		r.Count(StatusOpened), r.Count(StatusUpdated), r.Count(StatusUnchanged), r.Closed(), len(r.Failed))
}

// Err joins the failures; nil when none.
func (r DriftReport) Err() error {
	errs := make([]error, len(r.Failed))
	for i, f := range r.Failed {
		errs[i] = f
	}
	return errors.Join(errs...)
}

// Drift finds every pin that follows a tag (a repo:tag@digest reference, a
// Helm tag or kustomize newTag next to the digest, or a track entry of
// .pinbot.yaml for digest-only pins), resolves each distinct tag once, and
// promotes the tags that moved through the same pull request machinery as
// Run, one pull request per image and target by default. A digest younger
// than the minimum age (see Age) is held back. A failure for one image is
// reported in the DriftReport and does not stop the others; the error
// return is for failures that stop the whole run (no clone, bad config).
func Drift(ctx context.Context, env Env, opts DriftOptions) (DriftReport, error) {
	env.defaults()
	var rep DriftReport
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	// The tags of the head the cache holds start resolving while the
	// current head is fetched; when it is the same commit, its config and
	// pins stand too.
	tags := newResolver(env.Registry, opts.Concurrency)
	prior := cached(ctx, &env)
	if prior != nil {
		for _, t := range prior.tracked() {
			tags.start(ctx, t.key.image+":"+t.key.tag)
		}
	}
	s, err := openFrom(ctx, &env, prior, false)
	if err != nil {
		return rep, err
	}
	s.tags = tags
	minAge := s.cfg.Drift.MinAge
	if opts.MinAge != nil {
		minAge = *opts.MinAge
	}
	group := s.cfg.Drift.Group
	if opts.Group != "" {
		group = opts.Group
	}
	// The open pull requests are listed while the tags resolve: neither
	// needs the other.
	type listing struct {
		pulls []gitforge.Pull
		err   error
	}
	listed := make(chan listing, 1)
	go func() {
		pulls, err := env.Forge.ListPulls(ctx, env.Repo, "open")
		listed <- listing{pulls, err}
	}()
	tracked := s.tracked()
	s.resolveAll(ctx, tracked, opts)
	moved := s.decide(ctx, tracked, minAge, opts, &rep)
	keepState(opts.State, tracked, &rep)

	l := <-listed
	if l.err != nil {
		return rep, fmt.Errorf("listing open pull requests of %s: %w", env.Repo, l.err)
	}
	byBranch := map[string]*gitforge.Pull{}
	for i := range l.pulls {
		byBranch[l.pulls[i].Head] = &l.pulls[i]
	}
	planned := s.publishDrift(ctx, moved, group, byBranch, opts, &rep)
	rep.Results = append(rep.Results, s.closeStale(ctx, byBranch, planned, tracked, opts.DryRun, &rep)...)
	return rep, nil
}

// decide says which resolved tags drift proposes, counting each checked
// tag in rep: a tag that failed to resolve, a digest younger than minAge
// (held), a target the release gate does not admit it into, or a digest
// the signature policy refuses is reported and not proposed.
func (s *session) decide(ctx context.Context, tracked []*tracking, minAge time.Duration, opts DriftOptions, rep *DriftReport) []*tracking {
	log := logctx.From(ctx)
	now := s.env.Now()
	var moved []*tracking
	for _, t := range tracked {
		if !t.checked {
			continue
		}
		rep.Checked++
		if t.err != nil {
			rep.Failed = append(rep.Failed, Failure{Image: t.key.image, Tag: t.key.tag, Err: t.err})
			continue
		}
		if len(t.moved) == 0 {
			continue
		}
		age, known := ageOf(opts.State, t.key.image, t.key.tag, t.promo.Digest, t.promo.Described.Created, now)
		tr := Tracked{Image: t.key.image, Tag: t.key.tag, Digest: t.promo.Digest, Age: age, AgeKnown: known, Targets: sortedKeys(t.moved)}
		switch {
		case minAge > 0 && known && age < minAge:
			log.Info("holding a new digest inside the stabilisation window", "image", tr.Image, "tag", tr.Tag,
				"digest", tr.Digest, "age", age.Round(time.Second).String(), "min_age", minAge.String())
			rep.Held = append(rep.Held, tr)
			continue
		case minAge > 0 && !known:
			log.Warn("cannot measure the digest's age (no drift state and no created time); not holding it",
				"image", tr.Image, "tag", tr.Tag, "digest", tr.Digest)
		}
		for target := range t.moved {
			a, ok := s.admission(ctx, target, t.key.image, t.promo.Digest, false)
			if !ok {
				continue
			}
			err := ErrNoGate
			if opts.Admitter != nil {
				err = opts.Admitter.Admit(ctx, a)
			}
			if err != nil {
				delete(t.moved, target)
				rep.Failed = append(rep.Failed, Failure{Image: t.key.image, Tag: t.key.tag, Err: fmt.Errorf("not proposing %s into %s: %w", imageref.Short(t.promo.Digest), target, err)})
			}
		}
		if len(t.moved) == 0 {
			continue
		}
		prov, err := s.signature(ctx, t.promo, opts.Policy)
		if err != nil {
			rep.Failed = append(rep.Failed, Failure{Image: t.key.image, Tag: t.key.tag, Err: fmt.Errorf("not proposing %s: %w", imageref.Short(t.promo.Digest), err)})
			continue
		}
		t.promo.Trust = &prov
		rep.Moved = append(rep.Moved, tr)
		moved = append(moved, t)
	}
	return moved
}

// keepState forgets the first-seen times of digests no tracked tag points
// at any more, and saves the rest; a failed save is reported in rep.
func keepState(state *State, tracked []*tracking, rep *DriftReport) {
	if state == nil {
		return
	}
	current := map[string]bool{}
	for _, t := range tracked {
		if t.err == nil && t.promo.Digest != "" {
			current[stateKey(t.key.image, t.key.tag, t.promo.Digest)] = true
		}
	}
	state.Keep(func(image, tag, digest string) bool { return current[stateKey(image, tag, digest)] })
	if err := state.Save(); err != nil {
		rep.Failed = append(rep.Failed, Failure{Err: err})
	}
}

// publishDrift opens or updates the pull request of each branch the moved
// tags group into (byBranch are the open ones), leaving alone a branch
// whose open pull request a promotion opened, records each outcome in
// rep, and returns the branches it planned.
func (s *session) publishDrift(ctx context.Context, moved []*tracking, group Group, byBranch map[string]*gitforge.Pull, opts DriftOptions, rep *DriftReport) map[string]bool {
	log := logctx.From(ctx)
	planned := map[string]bool{}
	for _, j := range s.driftJobs(moved, group, opts.Choose) {
		planned[j.branch] = true
		if pull := byBranch[j.branch]; pull != nil {
			if m, err := pr.ParseBody(pull.Body); err == nil && !driftOnly(m) {
				rep.Results = append(rep.Results, Result{
					Target: j.target, Branch: j.branch, Status: StatusSkipped, Pull: pull, Meta: j.meta(),
					Notes: []string{fmt.Sprintf("open pull request #%d was opened by a promotion (%s); drift leaves it alone", pull.Number, sourcesOf(m))},
				})
				log.Info("skipping a branch with an open promotion", "branch", j.branch, "number", pull.Number)
				continue
			}
		}
		j.listed = &listedPull{pull: byBranch[j.branch]}
		res, err := s.runJob(ctx, j, opts.DryRun)
		if err != nil {
			rep.Failed = append(rep.Failed, Failure{Branch: j.branch, Err: fmt.Errorf("publishing %s: %w", j.branch, err)})
			continue
		}
		rep.Results = append(rep.Results, res)
	}
	return planned
}

// driftJobs groups the moved tags into branches.
func (s *session) driftJobs(moved []*tracking, group Group, opts ChooseOptions) []job {
	type jobKey struct{ target, image string }
	byKey := map[jobKey]*job{}
	var keys []jobKey
	for _, t := range moved {
		for _, target := range sortedKeys(t.moved) {
			k := jobKey{target: target}
			switch group {
			case GroupImage:
				k.image = t.key.image
			case GroupAll:
				k.target = ""
			}
			j := byKey[k]
			if j == nil {
				branch := pr.GroupBranch(s.cfg.BranchPrefix, k.target)
				if group == GroupImage {
					branch = pr.Branch(s.cfg.BranchPrefix, k.target, k.image)
				}
				j = &job{target: k.target, branch: branch, obsolete: closeIfDrift}
				byKey[k] = j
				keys = append(keys, k)
			}
			if group == GroupAll && len(j.proms) > 0 && j.proms[len(j.proms)-1].key == t.key {
				continue // already in the job through another target
			}
			j.proms = append(j.proms, s.driftPromotion(t, k.target, opts))
		}
	}
	jobs := make([]job, len(keys))
	for i, k := range keys {
		jobs[i] = *byKey[k]
	}
	return jobs
}

// driftPromotion lets t's digest change the pins that follow t's tag in
// target ("" for every target). Tags in files stay as they are.
func (s *session) driftPromotion(t *tracking, target string, opts ChooseOptions) jobPromotion {
	k := t.key
	return jobPromotion{
		Promotion: t.promo,
		// The tag names the digest's variant; the pins matched carry it
		// already (or none), so no tag in a file changes.
		tag: k.tag,
		key: k,
		match: func(p pins.Pin) bool {
			tgt := s.cfg.TargetOf(p.File)
			return p.Image == k.image && s.tagOf(p) == k.tag && tgt != "" && (target == "" || tgt == target) && p.Digest != ""
		},
		choose: opts,
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
