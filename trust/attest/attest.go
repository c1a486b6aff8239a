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

// Format says where Write puts an attestation: as a Sigstore bundle
// referrer (what cosign attest v3, Kyverno's SigstoreBundle type and
// pinbot read), as cosign's legacy sha256-<hex>.att image (what
// Sigstore's policy-controller reads for a key-signed attestation), or
// both.
type Format string

// The formats.
const (
	FormatBundle Format = "bundle"
	FormatLegacy Format = "legacy"
	FormatBoth   Format = "both"
)

// Check says whether f is a format ("" is FormatBoth's default), naming
// them when not.
func (f Format) Check() error {
	switch f {
	case "", FormatBundle, FormatLegacy, FormatBoth:
		return nil
	}
	return fmt.Errorf("format %q: want bundle, legacy or both", string(f))
}

// The annotations of a bundle referrer: the manifest repository whose
// chain proved the digest (a newer attestation of it supersedes the
// older), and the environment and stage of its own proof.
const (
	AnnotationRepository  = "dev.pinbot.repository"
	AnnotationEnvironment = "dev.pinbot.environment"
	AnnotationStage       = "dev.pinbot.stage"
)

// Written is what Write attached.
type Written struct {
	// Ref is the bundle referrer's digest, or the legacy image's when no
	// bundle was written.
	Ref name.Digest
	// Superseded counts the older attestations of the repository it
	// removed.
	Superseded int
}

// Record adds to p's record (its ProvenIn) what the attestations of its
// digest that keys verify (the signer's own) said before, so the one
// Write attaches says all of it: it replaces them.
func Record(ctx context.Context, reg trust.Registry, keys *trust.Keys, p proven.Predicate) (proven.Predicate, error) {
	verified, _, err := keys.Statements(ctx, reg, p.Image, p.Digest, proven.PredicateType)
	if err != nil {
		return p, err
	}
	var earlier []proven.Predicate
	for _, s := range verified {
		var q proven.Predicate
		if json.Unmarshal(s.Predicate, &q) == nil {
			earlier = append(earlier, q)
		}
	}
	p.Remember(earlier...)
	return p, nil
}

// Replace writes p as Write does, with the record of what k attested of
// its digest before (Record), which it replaces.
func Replace(ctx context.Context, reg trust.Registry, k *sign.Key, p proven.Predicate, f Format, opts ...remote.Option) (Written, error) {
	pem, err := k.PublicPEM()
	if err != nil {
		return Written{}, err
	}
	own, err := trust.KeyOf("the signing key", pem)
	if err != nil {
		return Written{}, err
	}
	if p, err = Record(ctx, reg, own, p); err != nil {
		return Written{}, fmt.Errorf("reading what was attested before: %w", err)
	}
	return Write(ctx, k, p, f, opts...)
}

// Write signs p with k and attaches it to the image p names, in format
// f, its digest the subject, with the platform children that ran as more
// subjects. One attestation per repository stays attached to a digest in
// each format: the newer replaces the older, so p should carry the
// older ones' record (Record). A legacy write the registry refuses
// leaves the bundle written, and is an error.
func Write(ctx context.Context, k *sign.Key, p proven.Predicate, f Format, opts ...remote.Option) (Written, error) {
	ref, err := name.NewDigest(p.Image + "@" + p.Digest)
	if err != nil {
		return Written{}, fmt.Errorf("the attestation's subject: %w", err)
	}
	var children []string
	for _, pod := range p.Pods {
		if pod.Running != "" && pod.Running != p.Digest && !slices.Contains(children, pod.Running) {
			children = append(children, pod.Running)
		}
	}
	bundle, err := k.Attestation(ref, proven.PredicateType, p, children)
	if err != nil {
		return Written{}, err
	}
	var w Written
	if f != FormatLegacy {
		ours := map[string]string{AnnotationRepository: p.Repository, AnnotationEnvironment: p.Environment, AnnotationStage: p.Stage}
		if w.Ref, err = sign.AttachBundle(ctx, ref, proven.PredicateType, bundle, ours, opts...); err != nil {
			return Written{}, err
		}
		same, err := sign.BundleAnnotations(proven.PredicateType, map[string]string{AnnotationRepository: p.Repository})
		if err != nil {
			return Written{}, err
		}
		if w.Superseded, err = sign.Supersede(ctx, ref, w.Ref.DigestStr(), same, opts...); err != nil {
			return w, fmt.Errorf("attached as %s, but the older attestations it replaces stay: %w", w.Ref.DigestStr(), err)
		}
	}
	if f == FormatBundle {
		return w, nil
	}
	envelope, err := sign.EnvelopeOf(bundle)
	if err != nil {
		return w, err
	}
	legacy, err := sign.AttachLegacy(ctx, ref, proven.PredicateType, envelope, func(old []byte) bool { return !sameProof(old, p) }, opts...)
	if err != nil {
		return w, err
	}
	if f == FormatLegacy {
		w.Ref = legacy
	}
	return w, nil
}

// sameProof says whether a legacy attestation's envelope is pinbot's of
// p's repository, which p replaces.
func sameProof(envelope []byte, p proven.Predicate) bool {
	var e sign.Envelope
	var st struct {
		PredicateType string           `json:"predicateType"`
		Predicate     proven.Predicate `json:"predicate"`
	}
	if json.Unmarshal(envelope, &e) != nil || json.Unmarshal(e.Payload, &st) != nil {
		return false
	}
	return st.PredicateType == proven.PredicateType && st.Predicate.Repository == p.Repository
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
