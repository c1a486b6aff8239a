package serve

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/serve/actions"
	"pinbot.dev/pinbot/serve/chains"
)

// dashboardSource reads the dashboard's apps from the reconciler: the
// last pass of this replica (status and per-container verification), the
// persisted history (every replica reads the leader's), and on an app's
// page the open promotion pull requests from the forge.
type dashboardSource struct {
	r     *reconciler.Reconciler
	rl    *chains.Runner   // the release ledgers; nil for none
	repos func() []string  // the repositories whose chains rl runs
	acts  *actions.Handler // the page's actions; nil without a sign-in
}

// Person implements dashboard.Actor.
func (s dashboardSource) Person(req *http.Request) (user, csrf string) {
	if s.acts == nil {
		return "", ""
	}
	return s.acts.Person(req)
}

// Allowed implements dashboard.Actor.
func (s dashboardSource) Allowed(req *http.Request, repo, env string) []string {
	if s.acts == nil {
		return nil
	}
	return s.acts.Allowed(req, repo, env)
}

// Ledgers implements dashboard.LedgerSource: every repository's ledger,
// read from the cluster, so every replica shows the leader's, with the
// chain's apps as the apps page has them.
func (s dashboardSource) Ledgers(ctx context.Context) ([]dashboard.Ledger, error) {
	if s.rl == nil {
		return nil, nil
	}
	var out []dashboard.Ledger
	for _, repo := range s.repos() {
		l, err := s.rl.Ledgers().Read(ctx, repo)
		if err != nil {
			return nil, err
		}
		if len(l.Envs) == 0 && len(l.Events) == 0 {
			continue // neither environments nor refusals to show
		}
		chain, ok := s.rl.Chain(repo)
		if !ok {
			chain = l.Chain // a follower: as the leader last stepped it
		}
		lg := dashboard.Ledger{Repo: repo, Chain: chain, Ledger: l, Apps: map[string]dashboard.App{}}
		if f := s.r.Config().Forge; f != nil {
			lg.Web = strings.TrimRight(redact.URL(f.URL), "/") + "/" + repo
		}
		for _, e := range chain {
			for _, name := range e.Apps {
				if app, err := s.app(ctx, name); err == nil {
					lg.Apps[name] = app
				}
			}
		}
		out = append(out, lg)
	}
	return out, nil
}

// Apps implements dashboard.Source: each app placed in the release chain
// that names it.
func (s dashboardSource) Apps(ctx context.Context) ([]dashboard.App, error) {
	places := s.places(ctx)
	var out []dashboard.App
	for _, a := range s.r.Config().Apps {
		app, err := s.app(ctx, a.Name)
		if err != nil {
			return nil, err
		}
		if p, ok := places[a.Name]; ok {
			app.Repo, app.Env, app.Stage = p.repo, p.env, p.stage
		}
		out = append(out, app)
	}
	return out, nil
}

// place is where a release chain names an app.
type place struct {
	repo, env string
	stage     int
}

// places are the apps the release chains name, each in its first
// chain (by repository) and environment. A chain this replica does not
// step is read from its ledger, as the leader last stepped it.
func (s dashboardSource) places(ctx context.Context) map[string]place {
	out := map[string]place{}
	if s.rl == nil {
		return out
	}
	repos := slices.Clone(s.repos())
	slices.Sort(repos)
	for _, repo := range repos {
		chain, ok := s.rl.Chain(repo)
		if !ok {
			l, err := s.rl.Ledgers().Read(ctx, repo)
			if err != nil {
				continue // the apps still show, ungrouped
			}
			chain = l.Chain
		}
		for i, e := range chain {
			for _, app := range e.Apps {
				if _, seen := out[app]; !seen {
					out[app] = place{repo: repo, env: e.Name, stage: i}
				}
			}
		}
	}
	return out
}

// App implements dashboard.Source.
func (s dashboardSource) App(ctx context.Context, name string) (dashboard.App, error) {
	app, err := s.app(ctx, name)
	if err != nil {
		return app, err
	}
	if p, ok := s.places(ctx)[name]; ok {
		app.Repo, app.Env, app.Stage = p.repo, p.env, p.stage
	}
	if app.Pulls, err = s.r.OpenPulls(ctx, name); err != nil {
		// The forge feeds only the pull requests: the rest still shows.
		app.Unavailable = join(app.Unavailable, "pull requests: "+err.Error())
	}
	return app, nil
}

func (s dashboardSource) app(ctx context.Context, name string) (dashboard.App, error) {
	last, v, err := s.r.Last(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	rec, err := s.r.History(ctx, name)
	unavailable := ""
	if err != nil {
		// The cluster feeds the stored status and history: the app still
		// shows with what this replica knows.
		rec, unavailable = &history.Record{}, "stored status and history: "+firstLine(err.Error())
	}
	st := rec.Status // a follower runs no passes: the leader's persisted status
	if last != nil && (st == nil || !last.ObservedAt.Before(st.ObservedAt)) {
		st = last
	}
	if v == nil && st != nil && len(st.Pods) > 0 {
		// The leader's proof, as it stored it.
		v = &verdict.Verification{App: name, Commit: st.Commit, Verified: st.Verified, Containers: st.Pods}
	}
	a, err := s.r.Config().App(name)
	if err != nil {
		return dashboard.App{}, fmt.Errorf("%w: %s", dashboard.ErrNoApp, name)
	}
	// Who deploys the app (pinbot, argocd or flux) is the config's answer,
	// known before the first pass.
	return dashboard.App{Name: name, Source: string(a.Deployer()), Status: st, Verification: v, Record: rec, Unavailable: unavailable}, nil
}

// join joins two notices of one app.
func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
