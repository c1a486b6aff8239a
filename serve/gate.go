package serve

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
)

// gateAnswer answers the gate endpoint from the ledgers in the cluster
// (the same on every replica) and, for an app, the reconciler's last
// look.
func (d *daemon) gateAnswer(ctx context.Context, q proofapi.Query) (proofapi.Answer, error) {
	if q.App != "" {
		return d.appAnswer(ctx, q)
	}
	for _, t := range d.release.repos() {
		if q.Repo != "" && t.Repo != q.Repo {
			continue
		}
		l, _, err := d.release.ledgers.Get(ctx, t.Repo)
		if err != nil {
			return proofapi.Answer{}, err
		}
		if l.Envs[q.Env] == nil {
			continue
		}
		q.Repo = t.Repo
		return proofapi.FromLedger(l, q, d.release.now()), nil
	}
	return proofapi.Answer{}, fmt.Errorf("%w: environment %q", proofapi.ErrUnknown, q.Env)
}

// appAnswer answers for an app from its proof: the last pass of its loop
// here, or a fresh observe pass on a replica that does not run it.
func (d *daemon) appAnswer(ctx context.Context, q proofapi.Query) (proofapi.Answer, error) {
	if _, err := d.r.Config().App(q.App); err != nil {
		return proofapi.Answer{}, fmt.Errorf("%w: app %q", proofapi.ErrUnknown, q.App)
	}
	st, v, _, err := d.r.Proof(ctx, q.App)
	if err != nil {
		return proofapi.Answer{}, err
	}
	a := proofapi.Answer{Query: q}
	report := appReport(q.App, st, v, nil)
	image := q.Image
	if image == "" {
		for _, c := range report.Containers {
			if c.GitDigest == q.Digest {
				image = c.Image
			}
		}
	}
	obs := release.Assess(image, q.Digest, []release.AppReport{report})
	a.Verified, a.Why, a.Pods = obs.Proven, obs.Why, obs.Pods
	return a, nil
}
