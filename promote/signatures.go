package promote

import (
	"context"
	"fmt"
	"time"

	"pinbot.dev/pinbot/trust"
)

// checkSignatures checks every promotion against .pinbot.yaml's signature
// policy (Config.Trust), before anything is written, and keeps what it
// found for the pull request.
func (s *session) checkSignatures(ctx context.Context, proms []Promotion) error {
	for i := range proms {
		p, err := s.signature(ctx, proms[i])
		if err != nil {
			return err
		}
		proms[i].Trust = &p
	}
	return nil
}

// signature checks one promotion's digest against the policy. A refusal
// is a *trust.Refusal, naming the image, the digest and the rule.
func (s *session) signature(ctx context.Context, p Promotion) (trust.Provenance, error) {
	start := time.Now()
	prov, err := s.cfg.Trust.Check(ctx, s.env.Registry, trust.Subject{Image: p.Image, Digest: p.Digest})
	if err != nil {
		return trust.Provenance{}, fmt.Errorf("checking %s's signature policy: %w", ConfigFile, err)
	}
	took(ctx, "checked signatures", start, "image", p.Image, "digest", p.Digest, "guarded", prov.Guarded, "signer", prov.Signer)
	return prov, nil
}
