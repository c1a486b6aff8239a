package serve

import (
	"cmp"
	"context"
	"errors"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release/assess"
	"pinbot.dev/pinbot/serve/chains"
)

// newRunner is the release runner of d (package chains), which steps the
// chains of d's repositories on the leader.
func newRunner(d *daemon) *chains.Runner {
	deps := chains.Deps{
		Kube: d.kube, Namespace: d.ns, Interval: d.o.ReleaseInterval,
		Repos: d.repos,
		Report: func(ctx context.Context, app string) assess.Report { // its loop's last pass here, else a fresh observe pass
			st, v, _, err := d.r.Proof(ctx, app)
			return appReport(app, st, v, err)
		},
		Known: func(app string) bool {
			_, err := d.r.Config().App(app)
			return err == nil
		},
		Event: d.r.Event, Notify: d.notify, Refused: d.logRefusal,
	}
	if p := d.promote; p != nil {
		deps.Env, deps.Policy, deps.Registry = p.chainEnv, p.policy, p.reg
	}
	return chains.New(deps)
}

// repos are the promote entries' repositories, each once, and every
// repository an app of serve's lives in (a discovered app's too: where
// its Application deploys from), listed under promote: or not: each may
// declare a chain.
func (d *daemon) repos() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range d.cfg.Promote {
		if !seen[t.Repo] {
			seen[t.Repo] = true
			out = append(out, t.Repo)
		}
	}
	if f := d.cfg.Forge; f != nil {
		for _, app := range d.r.Config().Apps {
			for _, url := range append([]string{app.Repo}, app.DeployedFrom...) {
				repo, err := gitforge.RepoOf(f.URL, url)
				if url == "" || err != nil || seen[repo.String()] {
					continue // none, on another forge, or listed already
				}
				seen[repo.String()] = true
				out = append(out, repo.String())
			}
		}
	}
	return out
}

// chainEnv is the promote.Env of repo: its promote entry's, or, for a
// repository an app lives in, one with no entry.
func (p *promoter) chainEnv(repo string) (promote.Env, error) {
	for i := range p.cfg.Promote {
		if p.cfg.Promote[i].Repo == repo {
			return p.env(&p.cfg.Promote[i])
		}
	}
	return p.env(&Target{Repo: repo})
}

// appReport converts the reconciler's answer for release.
func appReport(app string, st *status.App, v *verdict.Verification, err error) assess.Report {
	out := assess.Report{App: app, Err: err}
	if st != nil && (st.Cluster != "" || err == nil) { // what a wave's placement picks it by: the cluster of its last pass
		out.Cluster, out.Labels = cmp.Or(st.Cluster, "in-cluster"), st.ClusterLabels
	}
	if err != nil {
		return out
	}
	if st == nil || v == nil {
		out.Err = errors.New("not observed yet")
		return out
	}
	out.Health, out.HealthReason = st.Health, st.HealthReason
	out.Synced = st.Sync == status.Synced
	out.Verified, out.Commit, out.Reasons, out.Containers = v.Verified, v.Commit, v.Reasons, v.Containers
	return out
}
