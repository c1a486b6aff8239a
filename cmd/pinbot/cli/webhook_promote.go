package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/registry"
)

// webhookOptions are the reconciler webhook's options from cfg: with a
// forge and promote entries, package events promote through promote.Run.
func webhookOptions(cfg *reconciler.Config) []reconciler.WebhookOption {
	p := newImagePromoter(cfg)
	if p == nil {
		return nil
	}
	return []reconciler.WebhookOption{reconciler.WithPromoter(p)}
}

// promoteTimeout bounds one promotion a follower forwarded, as the
// reconciler bounds a webhook's.
const promoteTimeout = 5 * time.Minute

// newImagePromoter is the promoter of cfg's promote entries on its forge,
// nil when cfg has no forge or no promote entries.
func newImagePromoter(cfg *reconciler.Config) reconciler.ImagePromoter {
	if cfg == nil || cfg.Forge == nil || len(cfg.Promote) == 0 {
		return nil
	}
	return &imagePromoter{forge: *cfg.Forge}
}

// imagePromoter is reconciler.ImagePromoter on promote.Run: the tag is
// resolved now (a HEAD), and promote's moved-tag check and already-pinned
// no-op apply as they do to `pinbot promote --image REF:TAG`.
type imagePromoter struct {
	forge reconciler.ForgeConfig
}

// PromoteImage promotes image:tag into t.Repo. The token (the forge's
// tokenFile, else $PINBOT_GITEA_TOKEN) is read on each call, so a rotated
// Secret takes effect without a restart.
func (p *imagePromoter) PromoteImage(ctx context.Context, t reconciler.PromoteTarget, image, tag string) (string, error) {
	repo, err := gitforge.ParseRepo(t.Repo)
	if err != nil {
		return "", fmt.Errorf("promote entry %q: %w", t.Repo, err)
	}
	tok := strings.TrimSpace(os.Getenv(tokenEnv)) // as drift: tokenFile, else the environment
	if p.forge.TokenFile != "" {
		if tok, err = gitforge.ReadToken(p.forge.TokenFile); err != nil {
			return "", err
		}
	}
	if tok == "" {
		return "", fmt.Errorf("promote entry %q: no Gitea token: set forge.tokenFile or $%s", t.Repo, tokenEnv)
	}
	redact.Register(tok)
	var opts []gitforge.GiteaOption
	if p.forge.CAFile != "" {
		opts = append(opts, gitforge.WithCAFile(p.forge.CAFile))
	}
	forge, err := gitforge.NewGitea(p.forge.URL, tok, opts...)
	if err != nil {
		return "", err
	}
	reg, err := registry.New()
	if err != nil {
		return "", fmt.Errorf("registry client: %w", err)
	}
	ins, err := promote.InputSpec{Image: image + ":" + tag}.Read(nil)
	if err != nil {
		return "", err
	}
	env := promote.Env{
		Forge: forge, Registry: reg, Repo: repo, CloneURL: forge.CloneURL(repo),
		Auth:     gitforge.Auth{Token: tok, CAFile: p.forge.CAFile},
		CacheDir: filepath.Join(os.TempDir(), "pinbot-webhook"),
	}
	results, err := promote.Run(ctx, env, promote.Request{Inputs: ins})
	if err != nil {
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
