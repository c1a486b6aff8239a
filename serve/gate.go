package serve

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/release/assess"
	"pinbot.dev/pinbot/release/proofapi"
)

// gateAnswer answers the gate endpoint: for an app from the reconciler's
// last look, else from the ledgers in the cluster (the same on every
// replica).
func (d *daemon) gateAnswer(ctx context.Context, q proofapi.Query) (proofapi.Answer, error) {
	if q.App != "" {
		return d.appAnswer(ctx, q)
	}
	return d.release.GateAnswer(ctx, q)
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
	obs := assess.Of(image, q.Digest, []assess.Report{report})
	a.Verified, a.Why, a.Pods = obs.Proven, obs.Why, obs.Pods
	return a, nil
}
