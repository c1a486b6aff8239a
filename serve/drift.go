package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"pinbot.dev/pinbot/internal/crontab"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/serve/chains"
)

// driftJob is one promote entry with a drift schedule.
type driftJob struct {
	spec string
	env  promote.Env
	opts promote.DriftOptions
	// refused is told of each failure that is a signature refusal; took
	// how long each run took.
	refused func(ctx context.Context, err error)
	took    func(kind string, d time.Duration)
}

// driftJobs are the config's promote entries that have a drift schedule,
// on the config's forge. A nil promoter (no forge, no entries) has none.
func (p *promoter) driftJobs(cfg *Config, rl *chains.Runner) ([]driftJob, error) {
	if p == nil {
		for i := range cfg.Promote {
			if t := &cfg.Promote[i]; t.Drift != "" {
				return nil, fmt.Errorf("config promote entry %s (line %d): drift needs the forge section", t.Repo, t.Line())
			}
		}
		return nil, nil
	}
	var jobs []driftJob
	for i := range cfg.Promote {
		t := &cfg.Promote[i]
		if t.Drift == "" {
			continue
		}
		env, err := p.env(t)
		if err != nil {
			return nil, err
		}
		repo := t.Repo
		jobs = append(jobs, driftJob{
			spec:    t.Drift,
			env:     env,
			opts:    promote.DriftOptions{Concurrency: promote.DefaultConcurrency, State: promote.NewState(), Admitter: rl.Admit(t.Repo), Policy: p.policy},
			refused: func(ctx context.Context, err error) { p.noteRefusal(ctx, repo, err) },
			took:    p.took,
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
			errs[i] = crontab.Run(ctx, j.spec, func(ctx context.Context) {
				start := time.Now()
				rep, err := promote.Drift(ctx, j.env, j.opts)
				if j.took != nil {
					j.took("drift", time.Since(start))
				}
				if err != nil {
					log.Error("drift run failed", "repo", j.env.Repo.String(), "error", redact.String(err.Error()))
					return
				}
				for _, f := range rep.Failed {
					log.Warn("drift failure", "repo", j.env.Repo.String(), "image", f.Image, "tag", f.Tag, "error", redact.String(f.Error()))
					if j.refused != nil {
						j.refused(ctx, f)
					}
				}
				log.Info(rep.Summary(), "repo", j.env.Repo.String())
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
