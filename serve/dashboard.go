package serve

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/reconciler"
)

// dashboardSource reads the dashboard's apps from the reconciler: the
// last pass of this replica (status and per-container verification), the
// persisted history (every replica reads the leader's), and on an app's
// page the open promotion pull requests from the forge.
type dashboardSource struct {
	r  *reconciler.Reconciler
	rl *releaser // the release ledgers; nil for none
}

// Ledgers implements dashboard.LedgerSource: every repository's ledger,
// read from the cluster, so every replica shows the leader's.
func (s dashboardSource) Ledgers(ctx context.Context) ([]dashboard.Ledger, error) {
	if s.rl == nil {
		return nil, nil
	}
	var out []dashboard.Ledger
	for _, t := range s.rl.repos() {
		l, _, err := s.rl.ledgers.Get(ctx, t.Repo)
		if err != nil {
			return nil, err
		}
		if len(l.Envs) == 0 && len(l.Events) == 0 {
			continue // neither environments nor refusals to show
		}
		chain, _ := s.rl.chain(t.Repo)
		out = append(out, dashboard.Ledger{Repo: t.Repo, Chain: chain, Ledger: l})
	}
	return out, nil
}

// Apps implements dashboard.Source.
func (s dashboardSource) Apps(ctx context.Context) ([]dashboard.App, error) {
	var out []dashboard.App
	for _, a := range s.r.Config().Apps {
		app, err := s.app(ctx, a.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, app)
	}
	return out, nil
}

// App implements dashboard.Source.
func (s dashboardSource) App(ctx context.Context, name string) (dashboard.App, error) {
	app, err := s.app(ctx, name)
	if err != nil {
		return app, err
	}
	if app.Pulls, err = s.r.OpenPulls(ctx, name); err != nil {
		return dashboard.App{}, err
	}
	return app, nil
}

func (s dashboardSource) app(ctx context.Context, name string) (dashboard.App, error) {
	last, v, err := s.r.Last(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	rec, err := s.r.History(ctx, name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("reading the history of %s: %w", name, err)
	}
	st := rec.Status // a follower runs no passes: the leader's persisted status
	if last != nil && (st == nil || !last.ObservedAt.Before(st.ObservedAt)) {
		st = last
	}
	a, err := s.r.Config().App(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	// Who deploys the app (pinbot, argocd or flux) is the config's answer,
	// known before the first pass.
	return dashboard.App{Name: name, Source: string(a.Deployer()), Status: st, Verification: v, Record: rec}, nil
}
