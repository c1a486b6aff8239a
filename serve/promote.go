package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/ciinput"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
)

// promoter promotes into the config's promote entries on the forge: the
// drift schedules and the pushed images. It holds one registry client for
// all of them, and one Git object cache, the reconciler's.
type promoter struct {
	cfg   *Config
	reg   *registry.Client
	cache *gitforge.Cache
	// gate admits promotions into a repository's environments (the
	// release ledger's holds and freezes); nil admits all.
	gate func(repo string) promote.Admitter
	// policy is the config's signatures:, checked besides each
	// repository's own; refused is told of each digest a policy refuses.
	policy  *trust.Verifier
	refused func(ctx context.Context, repo string, r *trust.Refusal)
	// took, when set, is told how long each promotion took, by kind.
	took func(kind string, d time.Duration)
}

// newPromoter is the promoter of cfg, nil when cfg has no forge or no
// promote entries.
func newPromoter(cfg *Config, cache *gitforge.Cache) (*promoter, error) {
	if cfg.Forge == nil {
		return nil, nil
	}
	// Gitea's own registry is behind the forge's CA, as a rule, and reads
	// packages with the forge token when the docker config has nothing.
	opts := []registry.Option{registry.WithCAFile(cfg.Forge.CAFile)}
	if tok, err := gitforge.ResolveToken(cfg.Forge.TokenFile); err == nil {
		opts = append(opts, registry.WithForgeToken(cfg.Forge.URL, tok))
	}
	reg, err := registry.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	if cache == nil {
		if cache, err = gitforge.NewCache(""); err != nil {
			return nil, err
		}
	}
	// The operator's policy: its keys sit beside the config (a mounted
	// Secret), as the reconciler reads them.
	policy, err := trust.Compile(cfg.Signatures, os.DirFS(cfg.SignaturesDir()))
	if err != nil {
		return nil, fmt.Errorf("the config's signature policy: %w", err)
	}
	return &promoter{cfg: cfg, reg: reg, cache: cache, policy: policy}, nil
}

// noteRefusal tells p.refused of err's refusal, if it is one.
func (p *promoter) noteRefusal(ctx context.Context, repo string, err error) {
	var r *trust.Refusal
	if errors.As(err, &r) && p.refused != nil {
		p.refused(ctx, repo, r)
	}
}

// env is the promote.Env of target t. The token (the forge's tokenFile,
// else $PINBOT_GITEA_TOKEN) is read on each call, so a rotated Secret
// takes effect without a restart.
func (p *promoter) env(t *Target) (promote.Env, error) {
	repo, err := gitforge.ParseRepo(t.Repo)
	if err != nil {
		return promote.Env{}, fmt.Errorf("config promote entry %s (line %d): %w", t.Repo, t.Line(), err)
	}
	f := p.cfg.Forge
	tok, err := gitforge.ResolveToken(f.TokenFile)
	if err != nil {
		return promote.Env{}, fmt.Errorf("forge: %w", err)
	}
	if tok == "" {
		return promote.Env{}, fmt.Errorf("config promote entry %s (line %d): no Gitea token: set forge.tokenFile or $%s", t.Repo, t.Line(), gitforge.TokenEnv)
	}
	forge, err := gitforge.Dial(f.URL, "", f.CAFile, tok)
	if err != nil {
		return promote.Env{}, err
	}
	env := promote.NewEnv(forge, p.reg, repo)
	env.Cache = p.cache
	return env, nil
}

// promoteImage promotes the pushed tag image:tag into t.Repo as `pinbot
// promote --image image:tag` would: the tag is resolved now (a HEAD), and
// promote's moved-tag check and already-pinned no-op apply. It returns a
// short account of what it did.
func (p *promoter) promoteImage(ctx context.Context, t Target, image, tag string) (string, error) {
	env, err := p.env(&t)
	if err != nil {
		return "", err
	}
	ins, err := ciinput.Spec{Image: image + ":" + tag}.Read(nil)
	if err != nil {
		return "", err
	}
	req := promote.Request{Inputs: ins, Policy: p.policy}
	if p.gate != nil {
		req.Admitter = p.gate(t.Repo)
	}
	start := time.Now()
	results, err := promote.Run(ctx, env, req)
	if p.took != nil {
		p.took("push", time.Since(start))
	}
	if err != nil {
		p.noteRefusal(ctx, t.Repo, err)
		return "", fmt.Errorf("promoting %s:%s into %s: %w", image, tag, t.Repo, err)
	}
	var out []string
	for _, r := range results {
		s := string(r.Status) + " " + r.Branch
		if r.Pull != nil {
			s += " " + r.Pull.URL
		}
		out = append(out, s)
	}
	return strings.Join(out, "; "), nil
}

// force opens the forced promotion of image@digest into env of repo,
// with reason, as pinbot promote --force does: on its own branch, past
// the gate's proof check, never past a hold. It says which pull request.
func (p *promoter) force(ctx context.Context, repo, env, image, digest, reason string) (string, error) {
	e, err := p.envOf(repo)
	if err != nil {
		return "", err
	}
	ins, err := ciinput.Spec{Image: image + "@" + digest}.Read(nil)
	if err != nil {
		return "", err
	}
	req := promote.Request{Inputs: ins, Policy: p.policy, Target: env, Force: true, Reason: reason}
	if p.gate != nil {
		req.Admitter = p.gate(repo)
	}
	results, err := promote.Run(ctx, e, req)
	if err != nil {
		p.noteRefusal(ctx, repo, err)
		return "", err
	}
	for _, r := range results {
		if r.Pull != nil {
			return fmt.Sprintf("#%d", r.Pull.Number), nil
		}
	}
	return "", fmt.Errorf("no pull request was opened: %s already pins it", env)
}

// merge merges pull request number of repo at head, the commit pinbot
// judged, as autoMerge does: Gitea's branch protection still holds.
func (p *promoter) merge(ctx context.Context, repo string, number int64, head, message string) error {
	e, err := p.envOf(repo)
	if err != nil {
		return err
	}
	forge, ok := e.Forge.(*gitforge.Gitea)
	if !ok {
		return errors.New("merging needs the Gitea forge")
	}
	err = forge.MergePull(ctx, e.Repo, number, head, message)
	switch {
	case errors.Is(err, gitforge.ErrNotMergeable):
		return fmt.Errorf("not merged yet, as Gitea's approvals or required checks say: %w", err)
	case errors.Is(err, gitforge.ErrHeadMoved):
		return fmt.Errorf("its head moved since pinbot judged it; pinbot judges the new head first: %w", err)
	}
	return err
}

// envOf is the promote.Env of serve's promote entry for repo.
func (p *promoter) envOf(repo string) (promote.Env, error) {
	for i := range p.cfg.Promote {
		if p.cfg.Promote[i].Repo == repo {
			return p.env(&p.cfg.Promote[i])
		}
	}
	return promote.Env{}, fmt.Errorf("serve's config has no promote entry for %s", repo)
}

// promotePushed promotes a package event's image on the leader (or
// without leader election) and forwards it to the leader on a follower.
func (d *daemon) promotePushed(ctx context.Context, t Target, image, tag string) (string, error) {
	if d.leads() {
		return d.promote.promoteImage(ctx, t, image, tag)
	}
	if err := forwardPromotion(ctx, d.kube, d.ns, t.Repo, image, tag); err != nil {
		return "", err
	}
	logctx.From(ctx).Info("forwarded a package event to the leader", "image", image, "tag", tag, "repo", t.Repo)
	return "forwarded to the leader", nil
}

// promoteForwarded promotes, on the leader, a package event a follower
// forwarded, into the promote entry it names (if the config still lists
// the image there), bounded by leadership and promoteTimeout.
func (d *daemon) promoteForwarded(ctx context.Context, req promoteRequest) {
	log := logctx.From(ctx).With("image", req.Image, "tag", req.Tag, "repo", req.Repo, "forwarded", true)
	var target *Target
	for _, t := range d.cfg.Targets(req.Image) {
		if t.Repo == req.Repo {
			target = &t
			break
		}
	}
	if d.promote == nil || target == nil {
		log.Warn("ignoring a forwarded promotion: no promote entry lists the image for the repository")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, promoteTimeout)
	defer cancel()
	res, err := d.promote.promoteImage(ctx, *target, req.Image, req.Tag)
	if err != nil {
		log.Error("promoting a pushed image", "error", redact.String(err.Error()))
		return
	}
	log.Info("promoted a pushed image", "result", res)
}
