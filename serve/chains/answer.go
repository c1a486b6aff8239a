package chains

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
)

// GateAnswer answers the gate endpoint for an environment from the
// ledgers in the cluster (the same on every replica).
func (rl *Runner) GateAnswer(ctx context.Context, q proofapi.Query) (proofapi.Answer, error) {
	for _, repo := range rl.deps.Repos() {
		if q.Repo != "" && repo != q.Repo {
			continue
		}
		l, err := rl.ledgers.Read(ctx, repo)
		if err != nil {
			return proofapi.Answer{}, err
		}
		chain, _ := rl.Chain(repo)
		down, attested := requiresAttestationOf(chain, q.Env)
		_, declared := chain.Get(q.Env)
		if l.Envs[q.Env] == nil && !declared && !attested {
			continue
		}
		q.Repo = repo
		a := proofapi.Answer{Query: q}
		if l.Envs[q.Env] != nil || declared {
			// Declared, but not stepped yet: it pins nothing pinbot
			// has seen, and holds nothing.
			a = proofapi.FromLedger(l, q, rl.now())
		}
		if attested && q.Image != "" && q.Digest != "" {
			at := rl.AttestationOf(ctx, repo)(release.Admission{Env: down, Upstream: q.Env, Image: q.Image, Digest: q.Digest})
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
