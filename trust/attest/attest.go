// Package attest writes and checks pinbot's "proven running"
// attestation: an in-toto statement, signed with the operator's key in a
// DSSE envelope and attached to the image as an OCI referrer (as cosign
// attest does), saying that a digest ran, proven, in an environment:
// where, which Pods, since when and for how long. Anyone with the public
// key reads it from the registry alone: cosign verify-attestation, a
// Kyverno or policy-controller policy, another pinbot. The predicate and
// what passes are package proven's.
package attest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/proven"
	"pinbot.dev/pinbot/trust/sign"
)

// Write signs p with k and attaches it to the image p names, its digest
// the subject, with the platform children that ran as more subjects.
// It returns the attestation's own digest.
func Write(ctx context.Context, k *sign.Key, p proven.Predicate, opts ...remote.Option) (name.Digest, error) {
	ref, err := name.NewDigest(p.Image + "@" + p.Digest)
	if err != nil {
		return name.Digest{}, fmt.Errorf("the attestation's subject: %w", err)
	}
	var children []string
	for _, pod := range p.Pods {
		if pod.Running != "" && pod.Running != p.Digest && !slices.Contains(children, pod.Running) {
			children = append(children, pod.Running)
		}
	}
	return sign.Attest(ctx, k, ref, proven.PredicateType, p, children, opts...)
}

// Query is what Verify asks of a digest's attestations.
type Query struct {
	// Image and Digest name the digest.
	Image, Digest string
	// Env is the environment it must have been proven in.
	Env string
	// MinSoak, when not 0, is how long it must have stayed proven there.
	MinSoak time.Duration
	// Keys are the cosign public keys one of which must have signed the
	// attestation.
	Keys *trust.Keys
}

// Answer is what the attestations say: the best one that passes (the
// longest proven), or why none does.
type Answer struct {
	Passed    bool              `json:"passed"`
	Predicate *proven.Predicate `json:"predicate,omitempty"`
	Signer    string            `json:"signer,omitempty"`
	// Why says why none passed: each attestation's reason.
	Why []string `json:"why,omitempty"`
}

// Verify reads the attestations of q's digest from the registry and
// answers whether one, signed by one of q's keys, says it was proven in
// q's environment for at least q's soak.
func Verify(ctx context.Context, reg trust.Registry, q Query) (Answer, error) {
	verified, failed, err := q.Keys.Statements(ctx, reg, q.Image, q.Digest, proven.PredicateType)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Why: failed}
	want := proven.Want{Env: q.Env, Digest: q.Digest, MinSoak: q.MinSoak}
	for _, s := range verified {
		var p proven.Predicate
		if err := json.Unmarshal(s.Predicate, &p); err != nil {
			a.Why = append(a.Why, fmt.Sprintf("%s: its predicate: %s", s.Where, err))
			continue
		}
		if err := p.Check(want); err != nil {
			a.Why = append(a.Why, fmt.Sprintf("%s: %s", s.Where, err))
			continue
		}
		if !a.Passed || p.ProvenFor > a.Predicate.ProvenFor {
			a.Passed, a.Predicate, a.Signer = true, &p, s.Signer
		}
	}
	if !a.Passed && len(a.Why) == 0 {
		a.Why = []string{fmt.Sprintf("no %s attestation is attached to %s@%s", proven.PredicateType, q.Image, q.Digest)}
	}
	if a.Passed {
		a.Why = nil
	}
	return a, nil
}
