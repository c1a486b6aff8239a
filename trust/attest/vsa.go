package attest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/trust/proven"
	"pinbot.dev/pinbot/trust/sign"
)

// VSAType is the predicate type of a SLSA Verification Summary
// Attestation, which policies that already trust a verifier read.
const VSAType = "https://slsa.dev/verification_summary/v1"

// DefaultVerifier is a VSA's verifier.id when serve's config names none.
const DefaultVerifier = "https://pinbot.dev/verifiers/pinbot-serve"

// VSA is the verification summary pinbot writes beside a soaked proof:
// that it verified the digest ran proven in an environment for its soak,
// by the environment's rule, from the proven-running attestation it
// names.
type VSA struct {
	Verifier           Verifier       `json:"verifier"`
	TimeVerified       time.Time      `json:"timeVerified"`
	ResourceURI        string         `json:"resourceUri"`
	Policy             Resource       `json:"policy"`
	InputAttestations  []Resource     `json:"inputAttestations"`
	VerificationResult string         `json:"verificationResult"`
	VerifiedLevels     []string       `json:"verifiedLevels"`
	DependencyLevels   map[string]int `json:"dependencyLevels,omitempty"`
}

// Verifier is a VSA's verifier.
type Verifier struct {
	ID      string            `json:"id"`
	Version map[string]string `json:"version,omitempty"`
}

// Resource is a VSA's resource descriptor: a URI and its digest.
type Resource struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest,omitempty"`
}

// SummaryOf is the VSA of p, a soaked proof, whose proven-running
// attestation is input, as verifier says.
func SummaryOf(p proven.Predicate, input name.Digest, verifier string) VSA {
	rule, _ := json.Marshal(struct {
		Environment string   `json:"environment"`
		Soak        string   `json:"soak"`
		Rules       []string `json:"rules"`
	}{p.Environment, time.Duration(p.Soak).String(), p.Rules})
	sum := sha256.Sum256(rule)
	q := url.Values{"repository": {p.Repository}, "environment": {p.Environment}}
	return VSA{
		Verifier:     Verifier{ID: verifier, Version: map[string]string{"pinbot": p.Pinbot}},
		TimeVerified: p.AttestedAt,
		ResourceURI:  "oci://" + p.Image + "@" + p.Digest,
		Policy:       Resource{URI: proven.PredicateType + "?" + q.Encode(), Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}},
		InputAttestations: []Resource{{URI: "oci://" + input.Context().Name() + "@" + input.DigestStr(),
			Digest: map[string]string{"sha256": strings.TrimPrefix(input.DigestStr(), "sha256:")}}},
		VerificationResult: "PASSED",
		VerifiedLevels:     []string{Level(p.Environment, time.Duration(p.Soak))},
	}
}

// Level is the custom verified level of a proof soaked in env for soak,
// PINBOT_PROVEN_RUNNING_<ENV>[_<SOAK>]: a VSA's levels that do not start
// with SLSA_ are the verifier's own.
func Level(env string, soak time.Duration) string {
	upper := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToUpper(r)
		}
		return '_'
	}, env)
	l := "PINBOT_PROVEN_RUNNING_" + upper
	if soak > 0 {
		d := soak.String() // 24h0m0s, 1h30m0s, 6s
		if strings.HasSuffix(d, "m0s") {
			d = d[:len(d)-2]
		}
		if strings.HasSuffix(d, "h0m") {
			d = d[:len(d)-2]
		}
		l += "_" + strings.ToUpper(d)
	}
	return l
}

// WriteSummary signs the VSA of p, a soaked proof whose proven-running
// attestation is input, and attaches it to p's digest as a Sigstore
// bundle, replacing the older VSA of the same repository and
// environment.
func WriteSummary(ctx context.Context, k *sign.Key, p proven.Predicate, input name.Digest, verifier string, opts ...remote.Option) (name.Digest, error) {
	if p.Stage != proven.StageSoaked {
		return name.Digest{}, fmt.Errorf("a verification summary is of a soaked proof, not a %s one", p.Stage)
	}
	ref, err := name.NewDigest(p.Image + "@" + p.Digest)
	if err != nil {
		return name.Digest{}, fmt.Errorf("the summary's subject: %w", err)
	}
	bundle, err := k.Attestation(ref, VSAType, SummaryOf(p, input, verifier), nil)
	if err != nil {
		return name.Digest{}, err
	}
	ours := map[string]string{AnnotationRepository: p.Repository, AnnotationEnvironment: p.Environment}
	written, err := sign.AttachBundle(ctx, ref, VSAType, bundle, ours, opts...)
	if err != nil {
		return name.Digest{}, err
	}
	same, err := sign.BundleAnnotations(VSAType, ours)
	if err != nil {
		return written, err
	}
	if _, err := sign.Supersede(ctx, ref, written.DigestStr(), same, opts...); err != nil {
		return written, fmt.Errorf("attached as %s, but the older summary it replaces stays: %w", written.DigestStr(), err)
	}
	return written, nil
}
