package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/registry"
)

// driftJob is one promote: entry with a drift schedule.
type driftJob struct {
	spec string
	env  promote.Env
	opts promote.DriftOptions
}

// driftJobs resolves the config's promote: entries that have a drift
// schedule into promote environments on the config's forge. The Gitea
// token is the forge's tokenFile, else $PINBOT_GITEA_TOKEN.
func driftJobs(cfg *reconciler.Config, cacheDir string) ([]driftJob, error) {
	var jobs []driftJob
	for i := range cfg.Promote {
		p := &cfg.Promote[i]
		if p.Drift == "" {
			continue
		}
		if cfg.Forge == nil {
			return nil, fmt.Errorf("config promote entry %s (line %d): drift needs the forge section", p.Repo, p.Line())
		}
		tok := strings.TrimSpace(os.Getenv(tokenEnv))
		if cfg.Forge.TokenFile != "" {
			t, err := gitforge.ReadToken(cfg.Forge.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("config forge tokenFile: %w", err)
			}
			tok = t
		}
		if tok == "" {
			return nil, fmt.Errorf("config promote entry %s (line %d): no Gitea token: set forge.tokenFile or $%s", p.Repo, p.Line(), tokenEnv)
		}
		redact.Register(tok)
		var gopts []gitforge.GiteaOption
		if cfg.Forge.CAFile != "" {
			gopts = append(gopts, gitforge.WithCAFile(cfg.Forge.CAFile))
		}
		forge, err := gitforge.NewGitea(cfg.Forge.URL, tok, gopts...)
		if err != nil {
			return nil, err
		}
		reg, err := registry.New()
		if err != nil {
			return nil, err
		}
		repo, err := gitforge.ParseRepo(p.Repo)
		if err != nil {
			return nil, fmt.Errorf("config promote entry (line %d): %w", p.Line(), err)
		}
		jobs = append(jobs, driftJob{
			spec: p.Drift,
			env: promote.Env{Forge: forge, Registry: reg, Repo: repo, CloneURL: forge.CloneURL(repo),
				Auth: gitforge.Auth{Token: tok, CAFile: cfg.Forge.CAFile}, CacheDir: cacheDir},
			opts: promote.DriftOptions{Concurrency: promote.DefaultConcurrency, State: promote.NewState()},
		})
	}
	return jobs, nil
}

// runDrift runs each job on its schedule, never overlapping runs of one
// job, until ctx ends.
func runDrift(ctx context.Context, jobs []driftJob) error {
	log := logctx.From(ctx)
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = promote.Schedule(ctx, j.spec, func(ctx context.Context) {
				rep, err := promote.Drift(ctx, j.env, j.opts)
				if err != nil {
					log.Error("drift run failed", "repo", j.env.Repo.String(), "error", redact.String(err.Error()))
					return
				}
				for _, f := range rep.Failed {
					log.Warn("drift failure", "repo", j.env.Repo.String(), "image", f.Image, "tag", f.Tag, "error", redact.String(f.Error()))
				}
				log.Info(rep.Summary(), "repo", j.env.Repo.String())
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
