// Package attest writes and checks pinbot's "proven running"
// attestation: an in-toto statement, signed with the operator's key in a
// DSSE envelope and attached to the image as an OCI referrer (as cosign
// attest does), saying that a digest ran, proven, in an environment:
// where, which Pods, since when and for how long. Anyone with the public
// key reads it from the registry alone: cosign verify-attestation, a
// Kyverno or policy-controller policy, another pinbot.
package attest

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/sign"
)

// PredicateType is the attestation's predicate type; its version changes
// only with an incompatible predicate. The predicate's JSON Schema is
// docs/schema/proven-running.v1.json.
const PredicateType = "https://pinbot.dev/attestations/proven-running/v1"

// Stages of a proof an attestation is written at.
const (
	// StageProven: the digest became proven in the environment.
	StageProven = "proven"
	// StageSoaked: it stayed proven for the environment's soak.
	StageSoaked = "soaked"
)

// Predicate says that Digest of Image ran, proven, in Environment.
type Predicate struct {
	// Environment is the release chain's environment, Repository the
	// manifest repository (OWNER/NAME) that declares it, Commit the
	// commit whose pins were proven.
	Environment string `json:"environment"`
	Repository  string `json:"repository"`
	Commit      string `json:"commit,omitempty"`
	// Image is the repository and Digest the digest Git pins; Tag the
	// tag written beside it, if any.
	Image  string `json:"image"`
	Digest string `json:"digest"`
	Tag    string `json:"tag,omitempty"`
	// Stage is StageProven or StageSoaked.
	Stage string `json:"stage"`
	// ProvenSince is when the proof first held without a break;
	// ProvenFor how long it had held when this was written, and Soak the
	// soak the environment asks of a digest before it moves on.
	ProvenSince time.Time `json:"provenSince"`
	ProvenFor   Duration  `json:"provenFor"`
	Soak        Duration  `json:"soak,omitempty"`
	// Clusters and Apps are where it ran; Pods each container that ran
	// it, with the imageID forms the runtimes reported.
	Clusters []string `json:"clusters"`
	Apps     []string `json:"apps"`
	Pods     []Pod    `json:"pods"`
	ImageIDs []string `json:"imageIDs,omitempty"`
	// Rules are what the proof required.
	Rules []string `json:"rules"`
	// Pinbot is the version of pinbot that proved it; AttestedAt when.
	Pinbot     string    `json:"pinbot"`
	AttestedAt time.Time `json:"attestedAt"`
}

// Pod is one container that ran the digest.
type Pod struct {
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Container string `json:"container"`
	Node      string `json:"node,omitempty"`
	// Running is the digest the runtime reported: the index's or a
	// platform child's.
	Running string `json:"running,omitempty"`
}

// Duration is a time.Duration written as Go writes one ("24h0m0s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Rules are the proof's rules every attestation states.
var Rules = []string{
	"every container of every Pod of each workload's current revision runs the digest Git pins (status.containerStatuses[].imageID)",
	"each workload has its desired number of such Pods, all Ready",
	"the app is healthy and Git's head is deployed",
}

// Write signs p with k and attaches it to the image p names, its digest
// the subject, with the platform children that ran as more subjects.
// It returns the attestation's own digest.
func Write(ctx context.Context, k *sign.Key, p Predicate, opts ...remote.Option) (name.Digest, error) {
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
	return sign.Attest(ctx, k, ref, PredicateType, p, children, opts...)
}

// Query is what Verify asks of a digest's attestations.
type Query struct {
	// Image and Digest name the digest.
	Image, Digest string
	// Env is the environment it must have been proven in.
	Env string
	// MinSoak, when not 0, is how long it must have stayed proven there.
	MinSoak time.Duration
	// Keys are the cosign public keys (PEM files read from Files) one of
	// which must have signed the attestation.
	Keys  []string
	Files fs.FS
}

// Answer is what the attestations say: the best one that passes (the
// longest proven), or why none does.
type Answer struct {
	Passed    bool       `json:"passed"`
	Predicate *Predicate `json:"predicate,omitempty"`
	Signer    string     `json:"signer,omitempty"`
	// Why says why none passed: each attestation's reason.
	Why []string `json:"why,omitempty"`
}

// Verify reads the attestations of q's digest from the registry and
// answers whether one, signed by one of q's keys, says it was proven in
// q's environment for at least q's soak.
func Verify(ctx context.Context, reg trust.Registry, q Query) (Answer, error) {
	verified, failed, err := trust.Statements(ctx, reg, q.Image, q.Digest, PredicateType, q.Keys, q.Files)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Why: failed}
	for _, s := range verified {
		var p Predicate
		if err := json.Unmarshal(s.Predicate, &p); err != nil {
			a.Why = append(a.Why, fmt.Sprintf("%s: its predicate: %s", s.Where, err))
			continue
		}
		switch {
		case p.Digest != q.Digest:
			a.Why = append(a.Why, fmt.Sprintf("%s: it is about %s, not %s", s.Where, p.Digest, q.Digest))
		case p.Environment != q.Env:
			a.Why = append(a.Why, fmt.Sprintf("%s: proven in %s, not %s", s.Where, p.Environment, q.Env))
		case time.Duration(p.ProvenFor) < q.MinSoak:
			a.Why = append(a.Why, fmt.Sprintf("%s: proven in %s for %s, less than %s", s.Where, p.Environment, time.Duration(p.ProvenFor), q.MinSoak))
		case !a.Passed || p.ProvenFor > a.Predicate.ProvenFor:
			a.Passed, a.Predicate, a.Signer = true, &p, s.Signer
		}
	}
	if !a.Passed && len(a.Why) == 0 {
		a.Why = []string{fmt.Sprintf("no %s attestation is attached to %s@%s", PredicateType, q.Image, q.Digest)}
	}
	if a.Passed {
		a.Why = nil
	}
	return a, nil
}
