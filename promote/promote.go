package promote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/policy"
)

// Forge is the part of the Gitea API promote uses; *gitforge.Gitea
// implements it.
type Forge interface {
	OpenPull(ctx context.Context, repo gitforge.Repo, head string) (*gitforge.Pull, error)
	ListPulls(ctx context.Context, repo gitforge.Repo, state string) ([]gitforge.Pull, error)
	GetPull(ctx context.Context, repo gitforge.Repo, number int64) (*gitforge.Pull, error)
	CreatePull(ctx context.Context, repo gitforge.Repo, p gitforge.Pull) (*gitforge.Pull, error)
	EditPull(ctx context.Context, repo gitforge.Repo, number int64, title, body string) (*gitforge.Pull, error)
	AddLabels(ctx context.Context, repo gitforge.Repo, number int64, labels []string) error
	RequestReviewers(ctx context.Context, repo gitforge.Repo, number int64, reviewers []string) error
	ClosePull(ctx context.Context, repo gitforge.Repo, number int64, comment string) error
	// Self is the login of the account promotions run as: a pull request
	// another account opened is never taken for pinbot's.
	Self(ctx context.Context) (string, error)
}

// Registry is the part of *registry.Client promote uses: resolving and
// describing digests, and reading their signatures (trust.Registry).
type Registry interface {
	Resolve(ctx context.Context, ref string) (registry.Descriptor, error)
	Describe(ctx context.Context, ref string) (registry.Image, error)
	ChildFor(ctx context.Context, indexRef string, p imageref.Platform) (registry.Child, error)
	trust.Registry
}

// defaultAttempts bounds how often one branch is regenerated from a fresh
// base: after a rejected push, or when the base moved during the promotion.
const defaultAttempts = 3

// Env is where promotions happen: the manifest repository on its forge,
// and the registry.
type Env struct {
	Forge    Forge
	Registry Registry
	// Repo is the manifest repository; CloneURL its Git URL.
	Repo     gitforge.Repo
	CloneURL string
	// Auth authenticates Git; the token never appears in output.
	Auth gitforge.Auth
	// Base is the branch promotions target; "" asks the forge for the
	// repository's default branch.
	Base string
	// Cache, when set, is the Git object cache promotions share with the
	// rest of the process (pinbot serve's reconciler).
	Cache *gitforge.Cache
	// CacheDir, without Cache, keeps the fetched objects between runs
	// under CacheDir/git, a directory of pinbot's own: a warm run fetches
	// only what changed since. "" fetches into memory.
	CacheDir string
	// Now is the clock (commit times, ages); default time.Now.
	Now func() time.Time
	// Attempts bounds regenerations per branch; default defaultAttempts.
	Attempts int
	// OnPhase, when set, is told each Phase a promotion reaches (the
	// CLI's test hook; see Phase).
	OnPhase func(Phase)
}

// NewEnv is the Env of promotions into repo on forge, with the registry
// reg: Git goes to the forge's clone URL of repo, with the forge's token
// and CA. Base, CacheDir and the rest keep their defaults.
func NewEnv(forge *gitforge.Gitea, reg Registry, repo gitforge.Repo) Env {
	return Env{Forge: forge, Registry: reg, Repo: repo, CloneURL: forge.CloneURL(repo), Auth: forge.GitAuth()}
}

func (e *Env) defaults() {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Attempts <= 0 {
		e.Attempts = defaultAttempts
	}
}

// Request is one `pinbot promote`.
type Request struct {
	// Inputs are the digests to promote; each becomes one promotion per
	// target holding pins of its image.
	Inputs []Input
	// AllowTagMoved promotes a digest even when its known tag now points
	// elsewhere.
	AllowTagMoved bool
	// AllowOlder promotes a digest even when the base pins, or the open
	// pull request proposes, a newer build of the image (see Superseded).
	AllowOlder bool
	// Choose tunes how each pin's digest is chosen.
	Choose ChooseOptions
	// DryRun fetches, resolves and renders, but pushes and edits nothing.
	DryRun bool
	// Target, when set, promotes into this target (an environment) alone.
	// Without it, a repository with environments is promoted into its
	// first ones (those that come from none); one without, into every
	// target holding pins of the image.
	Target string
	// Admitter admits or refuses each promotion into an environment:
	// serve's ledger, or `pinbot promote --gate-url`. Without one, a
	// promotion into an environment that comes from another is refused
	// (unless Force, or it carries a Proof).
	Admitter Admitter
	// Force promotes past the gate's proof check (never past a hold);
	// Reason says why. Both go into the pull request body.
	Force  bool
	Reason string
	// Proofs are the upstream proofs an onward promotion carries
	// (serve's), one per image.
	Proofs []*release.Proof
	// Group, when set, moves the inputs as one (serve's image groups,
	// environments' together:): one commit and one pull request per
	// target, on the group's branch.
	Group string
	// Rollback makes the promotion a rollback (serve's): its own branch
	// and label, and the digest may be older than what is pinned.
	Rollback *Rollback
	// Policy, when set, is a signature policy checked besides the
	// repository's own (.pinbot.yaml's signatures:): pinbot serve's, the
	// operator's. A digest must pass both.
	Policy *trust.Verifier
}

// Rollback is what a rollback pull request says: the digest that failed
// to prove, and how.
type Rollback struct {
	Failed   string
	Evidence string
	// At, when set, is the commit's time (the failed digest's merge), so
	// that a branch readied ahead (Ready) and the rollback pushed at the
	// deadline are the same commit, and that push is a no-op.
	At time.Time
	// Ready pushes the branch and opens no pull request.
	Ready bool
}

// Admitter admits a promotion into an environment, or says why not.
type Admitter interface {
	Admit(ctx context.Context, a release.Admission) error
}

// Status is what a promotion did to its branch and pull request.
type Status string

// Statuses of a Result.
const (
	// StatusOpened: the branch was pushed and a new pull request opened.
	StatusOpened Status = "opened"
	// StatusUpdated: the branch was pushed and the open pull request edited.
	StatusUpdated Status = "updated"
	// StatusUnchanged: the open pull request already proposes exactly this.
	StatusUnchanged Status = "unchanged"
	// StatusAlreadyPinned: the base already pins the digest; an open pull
	// request on the branch, if any, was closed as obsolete.
	StatusAlreadyPinned Status = "already-pinned"
	// StatusSuperseded: a newer build of the image is pinned in the base
	// or proposed by the open pull request, and nothing was written (see
	// Superseded and Result.Notes); or the branch was pushed, but a later
	// promotion replaced it before the pull request was written, and that
	// one owns the pull request's text.
	StatusSuperseded Status = "superseded"
	// StatusDryRun: nothing was pushed; Diff and Body show the proposal.
	StatusDryRun Status = "dry-run"
	// StatusSkipped: drift left the branch alone (see Result.Notes), or a
	// rollback readied ahead found a pull request open on its branch.
	StatusSkipped Status = "skipped"
	// StatusReadied: a rollback's branch was pushed ahead (Rollback.Ready)
	// and no pull request opened; Meta.Head is its head.
	StatusReadied Status = "readied"
)

// Result is the outcome for one branch.
type Result struct {
	Target string
	Branch string
	Status Status
	// Meta is what the branch proposes; its Changes are empty when the
	// base already pins the digests.
	Meta pr.Meta
	// Pull is the open pull request of the branch, if any.
	Pull *gitforge.Pull
	// Closed is a pull request closed as obsolete, if any.
	Closed *gitforge.Pull
	// Diff and Body are the rendered proposal, set when there are changes.
	Diff, Body string
	// Notes are remarks for people (also in the body).
	Notes []string
	// Signatures says, per image, who signed the digest and how it was
	// built (see package trust); nil for a rollback, which restores a
	// digest proven before and is not checked again.
	Signatures map[string]policy.Provenance
}

// Run promotes each input into every target holding pins of its image. It
// checks every input against the registry before anything is fetched or
// written, then works through the targets; an error in one target does not
// stop the others, and all errors are returned together with the results.
func Run(ctx context.Context, env Env, req Request) ([]Result, error) {
	env.defaults()
	if len(req.Inputs) == 0 {
		return nil, errors.New("promoting: no input")
	}
	// Verify every input while the base is fetched: both only read, and
	// nothing is written anywhere until both are done.
	openCtx, cancelOpen := context.WithCancel(ctx)
	defer cancelOpen()
	var s *session
	var openErr error
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		s, openErr = open(openCtx, &env)
	}()
	proms, verifyErr := verifyAll(ctx, env.Registry, req)
	if verifyErr != nil {
		cancelOpen()
	}
	<-opened
	switch {
	case verifyErr != nil:
		return nil, verifyErr
	case openErr != nil:
		return nil, openErr
	}

	// Nothing is written for a digest the signature policy refuses.
	if req.Rollback == nil {
		if err := s.checkSignatures(ctx, proms, req.Policy); err != nil {
			return nil, err
		}
	}
	targets, err := s.targets(req.Target)
	if err != nil {
		return nil, err
	}
	var results []Result
	var errs []error
	grouped := map[string]*job{} // by target, with Group
	for _, p := range proms {
		if !s.hasPins(p.Image, "") {
			logctx.From(ctx).Warn("no pins of the image in any target; nothing to promote", "image", p.Image)
		}
		for _, target := range targets {
			if !s.hasPins(p.Image, target) {
				continue
			}
			if err := s.admit(ctx, req, target, p); err != nil {
				errs = append(errs, err)
				continue
			}
			j := s.requestJob(req, p, target)
			if req.Group != "" {
				// The group's images go into one job: one commit.
				grouped[target] = joinJob(grouped[target], j, s.cfg.BranchPrefix, req)
				continue
			}
			res, err := s.runJob(ctx, j, req.DryRun)
			if err != nil {
				errs = append(errs, fmt.Errorf("promoting %s in target %s: %w", p.Image, target, err))
				continue
			}
			results = append(results, res)
		}
	}
	for _, target := range targets {
		j, ok := grouped[target]
		if !ok {
			continue
		}
		res, err := s.runJob(ctx, *j, req.DryRun)
		if err != nil {
			errs = append(errs, fmt.Errorf("promoting the group %s in target %s: %w", req.Group, target, err))
			continue
		}
		results = append(results, res)
	}
	if len(results) == 0 && len(errs) == 0 {
		where := ""
		if req.Target != "" {
			where = " target " + req.Target + " of"
		}
		return nil, fmt.Errorf("promoting: no pins of %s in%s %s (branch %s)", imagesOf(proms), where, env.Repo, s.base)
	}
	return results, errors.Join(errs...)
}

// requestJob is the job that promotes p into target as req asks: a
// rollback's or a forced promotion's on a branch of its own.
func (s *session) requestJob(req Request, p Promotion, target string) job {
	j := s.promoteJob(p, target, req.Choose)
	j.checkOrder = !req.AllowOlder && req.Rollback == nil
	j.proofs, j.rollback, j.group = req.Proofs, req.Rollback, req.Group
	if req.Force {
		j.forced = cmp.Or(req.Reason, "no reason given")
	}
	switch {
	case req.Rollback != nil:
		j.branch = pr.RollbackBranch(s.cfg.BranchPrefix, target, p.Image)
	case req.Force:
		j.branch = pr.ForcedBranch(s.cfg.BranchPrefix, target, p.Image)
	}
	return j
}

// targets are the targets a promotion goes into: the one named, or the
// first environments of a chain, or every target.
func (s *session) targets(named string) ([]string, error) {
	var all []string
	for _, t := range s.cfg.Targets {
		all = append(all, t.Name)
	}
	switch {
	case named != "" && !slices.Contains(all, named):
		return nil, fmt.Errorf("promoting: no target %q in %s (it has %s)", named, ConfigFile, strings.Join(all, ", "))
	case named != "":
		return []string{named}, nil
	case len(s.cfg.Environments) > 0:
		return s.cfg.Environments.Roots(), nil
	}
	return all, nil
}

// admit asks the gate whether p may go into target, an environment of
// the release chain (release.Admit decides). Without a gate it refuses:
// a promotion into an environment never skips its holds and proofs
// because the caller did not say where they are.
func (s *session) admit(ctx context.Context, req Request, target string, p Promotion) error {
	if _, ok := s.cfg.Environments.Get(target); !ok || len(req.Proofs) > 0 || req.Rollback != nil {
		return nil // not an environment, or serve's own promotion
	}
	a, _ := s.admission(ctx, target, p.Image, p.Digest, req.Force)
	if req.Admitter == nil {
		return fmt.Errorf("promoting %s into %s: %w", p.Image, target, ErrNoGate)
	}
	if err := req.Admitter.Admit(ctx, a); err != nil {
		return fmt.Errorf("promoting %s into %s: %w", p.Image, target, err)
	}
	return nil
}

// admission is the admission of image@digest into target, an
// environment, with the upstream's attestation read when target requires
// one (and force does not waive it): from the registry, verified with
// target's attestationKeys.
func (s *session) admission(ctx context.Context, target, image, digest string, force bool) (release.Admission, bool) {
	a, ok := s.cfg.Environments.Admission(target, image, digest)
	a.Force = force
	if ok && a.RequireAttestation && !force {
		a.Attested = attest.Read(ctx, s.env.Registry, s.cfg.AttestationKeys[target], image, digest, a.Upstream)
	}
	return a, ok
}

// ErrNoGate: a promotion into an environment of the release chain, with
// no way to read its holds and proofs.
var ErrNoGate = errors.New("an environment of the release chain: pinbot must read its holds and proofs first; give --gate-url (pinbot serve's gate endpoint, with --gate-token-file), or a kubeconfig that may read pinbot's ledger ConfigMaps (--ledger-namespace)")

// verifyAll checks every input against the registry (see Verify).
func verifyAll(ctx context.Context, reg Registry, req Request) ([]Promotion, error) {
	var proms []Promotion
	for _, in := range req.Inputs {
		start := time.Now()
		p, err := Verify(ctx, reg, in, req.AllowTagMoved)
		if err != nil {
			return nil, err
		}
		took(ctx, "verified digest", start, "image", p.Image, "digest", p.Digest, "tag", p.Tag, "source", string(p.Source))
		proms = append(proms, p)
	}
	return proms, nil
}

func imagesOf(proms []Promotion) string {
	s := ""
	for i, p := range proms {
		if i > 0 {
			s += ", "
		}
		s += p.Image
	}
	return s
}

// joinJob adds j's promotion to a group's job in j's target (nil for the
// first), on the group's branch.
func joinJob(into *job, j job, prefix string, req Request) *job {
	if into == nil {
		switch {
		case req.Rollback != nil:
			j.branch = pr.TogetherRollbackBranch(prefix, j.target, j.group)
		case req.Force:
			j.branch = pr.TogetherForcedBranch(prefix, j.target, j.group)
		default:
			j.branch = pr.TogetherBranch(prefix, j.target, j.group)
		}
		return &j
	}
	into.proms = append(into.proms, j.proms...)
	return into
}

// promoteJob is the job of one promotion in one target: every pin of the
// image in the target's files may change; an open pull request on the
// branch is obsolete when the base already pins the digest.
func (s *session) promoteJob(p Promotion, target string, opts ChooseOptions) job {
	return job{
		target: target,
		branch: pr.Branch(s.cfg.BranchPrefix, target, p.Image),
		proms: []jobPromotion{{
			Promotion: p,
			tag:       p.Tag,
			match:     func(pin pins.Pin) bool { return s.cfg.TargetOf(pin.File) == target },
			choose:    opts,
		}},
		obsolete: func(open *pr.Meta) (bool, string) {
			return true, closeComment(s.base, []pr.ImageMeta{{Image: p.Image, Digest: p.Digest, Tag: p.Tag, Source: p.Source}}, open)
		},
	}
}
