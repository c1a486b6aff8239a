package promote

import (
	"context"
	"fmt"
	"time"

	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
)

// checkSignatures checks every promotion against .pinbot.yaml's signature
// policy (Config.Trust) and extra, the caller's (nil for none), before
// anything is written, and keeps what it found for the pull request.
func (s *session) checkSignatures(ctx context.Context, proms []Promotion, extra *trust.Verifier) error {
	for i := range proms {
		p, err := s.signature(ctx, proms[i], extra)
		if err != nil {
			return err
		}
		proms[i].Trust = &p
	}
	return nil
}

// signature checks one promotion's digest against the repository's
// policy and extra. A refusal is a *trust.Refusal, naming the image, the
// digest and the rule. The provenance shown is the repository's policy's,
// or extra's where only that one guards the image.
func (s *session) signature(ctx context.Context, p Promotion, extra *trust.Verifier) (policy.Provenance, error) {
	start := time.Now()
	subject := trust.Subject{Image: p.Image, Digest: p.Digest}
	prov, err := s.cfg.Trust.Check(ctx, s.env.Registry, subject)
	if err != nil {
		return policy.Provenance{}, fmt.Errorf("checking %s's signature policy: %w", ConfigFile, err)
	}
	if extra != nil {
		more, err := extra.Check(ctx, s.env.Registry, subject)
		if err != nil {
			return policy.Provenance{}, fmt.Errorf("checking pinbot's own signature policy: %w", err)
		}
		if !prov.Guarded {
			prov = more
		}
	}
	took(ctx, "checked signatures", start, "image", p.Image, "digest", p.Digest, "guarded", prov.Guarded, "signer", prov.Signer)
	return prov, nil
}
