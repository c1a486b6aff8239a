// Package proven is pinbot's "proven running" predicate: what its
// attestation says of a digest (where it ran, which Pods, since when and
// for how long), and the one rule of whether an attestation says enough
// (Predicate.Check). trust/attest writes and reads the attestation; the
// signature policy (package trust) and the release chain's
// requireAttestation ask Check. It reads no file and speaks to no
// registry.
package proven

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PredicateType is the attestation's predicate type; its version changes
// only with an incompatible predicate. The predicate's JSON Schema is
// docs/schema/proven-running.v1.schema.json.
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
	// Wave is the wave of Environment's rollout that proved it, when the
	// environment rolls out in waves (Environment is then ENV.WAVE).
	Wave string `json:"wave,omitempty"`
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
	// ClusterProvenSince are, for a wave that names its clusters, when
	// each of them began to prove Digest without a break; a cluster its
	// maxUnproven tolerated unproven is absent.
	ClusterProvenSince map[string]time.Time `json:"clusterProvenSince,omitempty"`
	Apps               []string             `json:"apps"`
	Pods               []Pod                `json:"pods"`
	ImageIDs           []string             `json:"imageIDs,omitempty"`
	// Group is the group of images (a downstream environment's
	// together:) that Image moves with, and each member's digest proven
	// in Environment when this was written; unset when Image is in no
	// group, or a member was not proven there.
	Group *Group `json:"group,omitempty"`
	// ProvenIn is the record of every environment of Repository's chain
	// the digest was proven in, as this signer attested it so far,
	// Environment's own proof included, by environment. A verifier that
	// judges every attestation of a digest (Kyverno does) reads the whole
	// record from the one it finds: each new attestation replaces the
	// older ones of its repository (package attest).
	ProvenIn map[string]Proof `json:"provenIn,omitempty"`
	// By are the people whose actions brought Digest into Environment,
	// as the release ledger recorded them: a promotion forced past the
	// gate, a merge from the release page, a rollback asked for. Empty
	// when pinbot's chain moved it alone.
	By []Act `json:"by,omitempty"`
	// Rules are what the proof required.
	Rules []string `json:"rules"`
	// Pinbot is the version of pinbot that proved it; AttestedAt when.
	Pinbot     string    `json:"pinbot"`
	AttestedAt time.Time `json:"attestedAt"`
}

// Act is one person's action recorded in the release ledger: who, when,
// what, and the reason they gave.
type Act struct {
	Who  string    `json:"who"`
	At   time.Time `json:"at"`
	What string    `json:"what"`
	Why  string    `json:"why,omitempty"`
}

// Proof is one environment's entry of a Predicate's record: the furthest
// stage it reached there, and since when and for how long it had held when
// that was attested.
type Proof struct {
	Stage       string    `json:"stage"`
	ProvenSince time.Time `json:"provenSince"`
	ProvenFor   Duration  `json:"provenFor"`
	Soak        Duration  `json:"soak,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	AttestedAt  time.Time `json:"attestedAt"`
}

// Own is p's own proof, as its record's entry.
func (p *Predicate) Own() Proof {
	return Proof{Stage: p.Stage, ProvenSince: p.ProvenSince, ProvenFor: p.ProvenFor, Soak: p.Soak, Commit: p.Commit, AttestedAt: p.AttestedAt}
}

// Remember adds what an earlier attestation of the same digest and
// repository said (its own proof and its record) to p's record, and p's
// own proof; where two say something of one environment, the furthest
// stage wins, then the longer proof.
func (p *Predicate) Remember(earlier ...Predicate) {
	if p.ProvenIn == nil {
		p.ProvenIn = map[string]Proof{}
	}
	add := func(env string, e Proof) {
		if have, ok := p.ProvenIn[env]; !ok || further(e, have) {
			p.ProvenIn[env] = e
		}
	}
	for _, q := range earlier {
		if q.Digest != p.Digest || q.Repository != p.Repository {
			continue
		}
		for env, e := range q.ProvenIn {
			add(env, e)
		}
		add(q.Environment, q.Own())
	}
	add(p.Environment, p.Own())
}

// further says whether a went further than b: a later stage, or the same
// stage held longer.
func further(a, b Proof) bool {
	if a.Stage != b.Stage {
		return a.Stage == StageSoaked
	}
	return a.ProvenFor > b.ProvenFor
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

// Group is an image group proven together: its name and its members.
type Group struct {
	Name    string   `json:"name"`
	Members []Member `json:"members"`
}

// Member is one image of a Group and its digest proven.
type Member struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
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

// Want is what an attestation must say: that Digest was proven in Env,
// for at least MinSoak.
type Want struct {
	Env, Digest string
	MinSoak     time.Duration
}

// Check returns nil when p says what w wants, or why it does not.
// Its record counts: an attestation written for prod says too that the
// digest soaked in staging, when it did.
func (p *Predicate) Check(w Want) error {
	if p.Digest != w.Digest && !p.ran(w.Digest) {
		return fmt.Errorf("it is about %s, not %s", p.Digest, w.Digest)
	}
	proof, ok := p.ProvenIn[w.Env]
	if p.Environment == w.Env {
		proof, ok = p.Own(), true
	}
	if !ok {
		envs := []string{p.Environment}
		for env := range p.ProvenIn {
			if env != p.Environment {
				envs = append(envs, env)
			}
		}
		slices.Sort(envs[1:])
		return fmt.Errorf("proven in %s, not %s", strings.Join(envs, ", "), w.Env)
	}
	if time.Duration(proof.ProvenFor) < w.MinSoak {
		return fmt.Errorf("proven in %s for %s (attested at %s), less than %s", w.Env, time.Duration(proof.ProvenFor),
			proof.AttestedAt.UTC().Format(time.RFC3339), w.MinSoak)
	}
	return nil
}

// ran reports whether one of p's Pods ran digest: a platform child of the
// index p pins, which the attestation has as a subject too.
func (p *Predicate) ran(digest string) bool {
	for _, pod := range p.Pods {
		if pod.Running == digest {
			return true
		}
	}
	return false
}

// Attested is what the attestations attached to a digest say of an
// environment: the longest-proven one a trusted key signed, or why none
// passed.
type Attested struct {
	// Passed: one, signed by a trusted key, says the digest was proven in
	// the environment.
	Passed bool `json:"passed"`
	// ProvenSince and ProvenFor are what it says: since when, and for
	// how long when it was signed (AttestedAt).
	ProvenSince time.Time     `json:"provenSince,omitzero"`
	ProvenFor   time.Duration `json:"provenFor,omitempty"`
	AttestedAt  time.Time     `json:"attestedAt,omitzero"`
	Signer      string        `json:"signer,omitempty"`
	// Why says why none passed.
	Why string `json:"why,omitempty"`
}
