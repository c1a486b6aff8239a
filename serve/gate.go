package serve

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/assess"
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
		l, err := d.release.ledgers.Read(ctx, t.Repo)
		if err != nil {
			return proofapi.Answer{}, err
		}
		chain, _ := d.release.chain(t.Repo)
		down, attested := requiresAttestationOf(chain, q.Env)
		_, declared := chain.Get(q.Env)
		if l.Envs[q.Env] == nil && !declared && !attested {
			continue
		}
		q.Repo = t.Repo
		a := proofapi.Answer{Query: q}
		if l.Envs[q.Env] != nil || declared {
			// Declared, but not stepped yet: it pins nothing pinbot
			// has seen, and holds nothing.
			a = proofapi.FromLedger(l, q, d.release.now())
		}
		if attested && q.Image != "" && q.Digest != "" {
			at := d.release.attestationOf(ctx, t.Repo)(release.Admission{Env: down, Upstream: q.Env, Image: q.Image, Digest: q.Digest})
			a.Attestation = at
			if !declared {
				// Another installation's environment: its attestation is
				// all there is to say.
				a.Verified, a.Why = at.Passed, at.Why
				if at.Passed {
					since := at.ProvenSince
					a.Since = &since
				}
			}
		}
		return a, nil
	}
	return proofapi.Answer{}, fmt.Errorf("%w: environment %q", proofapi.ErrUnknown, q.Env)
}

// requiresAttestationOf names the environment of chain that requires the
// attestation of env (requireAttestation with from: env), if one does.
func requiresAttestationOf(chain release.Chain, env string) (string, bool) {
	for _, e := range chain {
		if e.From == env && e.RequireAttestation {
			return e.Name, true
		}
	}
	return "", false
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
