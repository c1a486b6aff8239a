package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/release"
)

// Pause pauses (or, with resume, resumes) the onward promotions into env
// in each of repos' ledgers whose chain has env, recording who and why,
// and returns in how many it did; a ledger already so is left alone.
func (s *Ledgers) Pause(ctx context.Context, repos []string, env string, resume bool, who, why string, now time.Time) (int, error) {
	done := 0
	for _, r := range repos {
		err := s.Update(ctx, r, func(l *release.Ledger) error {
			if !slices.ContainsFunc(l.Chain, func(e release.Environment) bool { return e.Name == env }) {
				return nil
			}
			if !resume && l.PauseBy(env, who, why, now) || resume && l.ResumeBy(env, who, why, now) {
				done++
			}
			return nil
		})
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// AskRollback records in repo's ledger who asks to roll image in env back
// and why (release.Ledger.AskRollback); serve's next step opens the
// rollback.
func (s *Ledgers) AskRollback(ctx context.Context, repo, env, image, who, why string, now time.Time) error {
	return s.Update(ctx, repo, func(l *release.Ledger) error {
		if _, ok := l.Chain.Get(env); !ok {
			return fmt.Errorf("%s has no environment %s in its chain", repo, env)
		}
		return l.AskRollback(env, image, who, why, now)
	})
}
