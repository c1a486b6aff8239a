package trust

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/verify"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust/policy"
	"pinbot.dev/pinbot/trust/proven"
)

// ErrRefused is what every Refusal matches with errors.Is.
var ErrRefused = errors.New("refused by the signature policy")

// Refusal says which rule a digest failed and why. Nothing that carries
// it may move the digest.
type Refusal struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
	// Rule names the failed rule as .pinbot.yaml spells it:
	// "signatures[0]" for the signature, "signatures[0].attestations[1]"
	// for an attestation.
	Rule string `json:"rule"`
	// Reason is what failed, for a person.
	Reason string `json:"reason"`
}

// Error implements error.
func (r *Refusal) Error() string {
	return fmt.Sprintf("%s@%s is refused by %s: %s", r.Image, r.Digest, r.Rule, r.Reason)
}

// Is makes a Refusal match ErrRefused.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// Subject is a digest to check.
type Subject struct {
	// Image is the normalised repository; Digest the digest.
	Image, Digest string
	// Indexes are digests of indexes that may list Digest as a platform
	// child: a signed index covers its children.
	Indexes []string
	// Tag, when the pin names one, may point at such an index: it is
	// resolved only when Digest's own signature does not pass.
	Tag string
}

// Check decides whether s may move under the policy. A digest no rule
// names passes with a zero policy.Provenance. A digest a rule names
// passes with its Provenance, or fails with a *Refusal; an error of any
// other kind (the registry could not be read) decides nothing, and the
// digest must not move either.
func (v *Verifier) Check(ctx context.Context, reg Registry, s Subject) (policy.Provenance, error) {
	i := v.Policy().For(s.Image)
	if i < 0 {
		return policy.Provenance{}, nil
	}
	r := v.rules[i]
	if p, ok := v.remembered(i, s.Image, s.Digest); ok {
		return p, nil
	}
	p, err := v.checkDigest(ctx, reg, r, s.Image, s.Digest)
	var refusal *Refusal
	if errors.As(err, &refusal) {
		indexes := s.Indexes
		if s.Tag != "" {
			if img, terr := reg.Describe(ctx, s.Image+":"+s.Tag); terr == nil && img.Index {
				indexes = append(slices.Clone(indexes), img.Digest)
			}
		}
		for _, idx := range indexes {
			if idx == s.Digest {
				continue
			}
			ip, ierr := v.checkIndex(ctx, reg, r, s.Image, idx, s.Digest)
			if ierr == nil {
				p, err = ip, nil
				break
			}
			var irefusal *Refusal
			if !errors.As(ierr, &irefusal) {
				return policy.Provenance{}, ierr
			}
			// A multi-arch image is signed on its index, as cosign
			// signs it: the index's failure is the one to read.
			err = &Refusal{Image: s.Image, Digest: s.Digest, Rule: irefusal.Rule,
				Reason: fmt.Sprintf("the index %s: %s (and the platform image itself: %s)", imageref.Short(idx), irefusal.Reason, refusal.Reason)}
		}
	}
	if err != nil {
		return policy.Provenance{}, err
	}
	v.remember(i, s.Image, s.Digest, p)
	return p, nil
}

// checkIndex checks that index lists child, then the index itself.
func (v *Verifier) checkIndex(ctx context.Context, reg Registry, r *rule, image, index, child string) (policy.Provenance, error) {
	img, err := reg.Describe(ctx, image+"@"+index)
	if err != nil {
		return policy.Provenance{}, fmt.Errorf("reading the index %s@%s: %w", image, index, err)
	}
	if !slices.ContainsFunc(img.Children, func(c registry.Child) bool { return c.Digest == child }) {
		return policy.Provenance{}, v.refuse(r, image, child, "", "the index %s does not list it", imageref.Short(index))
	}
	return v.checkDigest(ctx, reg, r, image, index)
}

// checkDigest checks digest's own signature and attestations.
func (v *Verifier) checkDigest(ctx context.Context, reg Registry, r *rule, image, digest string) (policy.Provenance, error) {
	cands, err := find(ctx, reg, image, digest)
	if err != nil {
		return policy.Provenance{}, err
	}
	p := policy.Provenance{Guarded: true, Rule: fmt.Sprintf("signatures[%d]", r.index), Digest: digest}
	var why []string
	for _, c := range cands {
		if c.predicateType != "" && c.predicateType != CosignSign {
			continue // an attestation, below
		}
		s, err := r.verify(c, digest)
		if err != nil {
			why = append(why, fmt.Sprintf("%s %s: %s", c.format, c.where, err))
			continue
		}
		p.Format, p.Signer, p.SignedAt = c.format, s.signer, s.at
		break
	}
	if p.Signer == "" {
		if len(why) == 0 {
			return policy.Provenance{}, v.refuse(r, image, digest, "", "no signature found: no Sigstore bundle among its referrers and no %s tag", strings.Replace(digest, ":", "-", 1)+".sig")
		}
		return policy.Provenance{}, v.refuse(r, image, digest, "", "no signature verifies: %s", strings.Join(why, "; "))
	}
	for j, a := range r.attest {
		got, err := a.attested(cands, digest)
		if err != nil {
			return policy.Provenance{}, v.refuse(r, image, digest, fmt.Sprintf(".attestations[%d]", j), "%s", err)
		}
		p.Attestations = append(p.Attestations, got)
	}
	return p, nil
}

func (v *Verifier) refuse(r *rule, image, digest, field, format string, args ...any) error {
	return &Refusal{Image: image, Digest: digest, Rule: fmt.Sprintf("signatures[%d]%s", r.index, field), Reason: fmt.Sprintf(format, args...)}
}

// signed is who signed a candidate, and when.
type signed struct {
	signer string
	at     time.Time
	result *verify.VerificationResult
}

// verify verifies c over digest with each of r's signers in turn, and
// returns the first that verifies it; the error says why none did.
func (r *rule) verify(c candidate, digest string) (signed, error) {
	if b, ok := c.entity.(broken); ok {
		return signed{}, b.err
	}
	if c.format == FormatLegacy {
		return r.verifyLegacy(c, digest)
	}
	algo, hexDigest, _ := strings.Cut(digest, ":")
	raw, err := hex.DecodeString(hexDigest)
	if err != nil {
		return signed{}, fmt.Errorf("digest %s: %w", digest, err)
	}
	artifact := verify.WithArtifactDigest(algo, raw)
	var why []string
	for _, k := range r.keys {
		res, err := k.verify.Verify(c.entity, verify.NewPolicy(artifact, verify.WithKey()))
		if err == nil {
			return signed{signer: k.text(), at: verifiedAt(res), result: res}, nil
		}
		why = append(why, fmt.Sprintf("key %s: %s", k.file, err))
	}
	if len(r.identities) > 0 {
		ids := make([]string, 0, len(r.identities))
		for _, id := range r.identities {
			res, err := r.keyless.Verify(c.entity, verify.NewPolicy(artifact, verify.WithCertificateIdentity(id.id)))
			if err == nil {
				return signed{signer: certSigner(res), at: verifiedAt(res), result: res}, nil
			}
			ids = append(ids, err.Error())
		}
		why = append(why, "keyless: "+dedupe(ids))
	}
	return signed{}, errors.New(strings.Join(why, "; "))
}

// verifyLegacy verifies a legacy signature with r's keys, and checks
// that its payload names digest.
func (r *rule) verifyLegacy(c candidate, digest string) (signed, error) {
	if c.keyless {
		return signed{}, errors.New("a legacy keyless signature carries no proof pinbot can check offline: sign with cosign v3's bundles")
	}
	var payload struct {
		Critical struct {
			Image map[string]string `json:"image"`
			Type  string            `json:"type"`
		} `json:"critical"`
	}
	var why []string
	for _, k := range r.keys {
		_, err := k.verify.Verify(c.entity, verify.NewPolicy(verify.WithArtifact(strings.NewReader(string(c.payload))), verify.WithKey()))
		if err == nil {
			// Only a verified payload is read.
			if err := json.Unmarshal(c.payload, &payload); err != nil {
				return signed{}, fmt.Errorf("the signed payload: %w", err)
			}
			if got := payload.Critical.Image[cosignPayloadDigest]; got != digest || payload.Critical.Type != simpleSigningType {
				return signed{}, fmt.Errorf("the signature is valid but signs %s, not this digest", orNothing(got))
			}
			return signed{signer: k.text()}, nil
		}
		why = append(why, fmt.Sprintf("key %s: %s", k.file, err))
	}
	if len(why) == 0 {
		return signed{}, errors.New("the rule has no keys, and a legacy signature is verified by keys only")
	}
	return signed{}, errors.New(strings.Join(why, "; "))
}

// attested finds an attestation of a's predicate type over digest that
// one of a's signers (its own keys, else its rule's) signed and whose
// provenance matches a's patterns.
func (a attestation) attested(cands []candidate, digest string) (policy.Attested, error) {
	var why []string
	for _, c := range cands {
		if c.predicateType != a.PredicateType {
			continue
		}
		s, err := a.signers.verify(c, digest)
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %s", c.where, err))
			continue
		}
		got := provenanceOf(s.result)
		got.PredicateType, got.Signer = a.PredicateType, s.signer
		if err := a.match(got); err != nil {
			why = append(why, fmt.Sprintf("%s: %s", c.where, err))
			continue
		}
		if err := a.provenRunning(s, digest, &got); err != nil {
			why = append(why, fmt.Sprintf("%s: %s", c.where, err))
			continue
		}
		return got, nil
	}
	if len(why) == 0 {
		return policy.Attested{}, fmt.Errorf("no attestation of predicate type %s is attached", a.PredicateType)
	}
	return policy.Attested{}, fmt.Errorf("no attestation of predicate type %s passes: %s", a.PredicateType, strings.Join(why, "; "))
}

// match checks the attestation's facts against a's patterns.
func (a attestation) match(got policy.Attested) error {
	for _, f := range []struct {
		name, value string
		re          interface{ MatchString(string) bool }
		pattern     string
	}{
		{"builder ID", got.BuilderID, a.builder, a.BuilderID},
		{"source repository", got.SourceRepository, a.source, a.SourceRepository},
		{"ref", got.Ref, a.ref, a.Ref},
	} {
		if f.pattern != "" && !f.re.MatchString(f.value) {
			return fmt.Errorf("its %s %s does not match %s", f.name, orNothing(f.value), f.pattern)
		}
	}
	return nil
}

// provenRunning checks what a pinbot proven-running attestation says
// against a's environment and soak, and notes where and how long it ran.
func (a attestation) provenRunning(s signed, digest string, got *policy.Attested) error {
	if a.PredicateType != proven.PredicateType {
		return nil
	}
	raw, err := s.predicate()
	if err != nil {
		return err
	}
	var p proven.Predicate
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("its predicate: %w", err)
	}
	if err := p.Check(proven.Want{Env: a.Environment, Digest: digest, MinSoak: a.MinSoak}); err != nil {
		return err
	}
	got.Environment, got.ProvenFor = p.Environment, time.Duration(p.ProvenFor).String()
	return nil
}

func (k key) text() string { return "key " + k.file + " (" + k.fingerprint + ")" }

func certSigner(res *verify.VerificationResult) string {
	if res == nil || res.Signature == nil || res.Signature.Certificate == nil {
		return "a certificate"
	}
	c := res.Signature.Certificate
	return "issuer " + c.Issuer + ", subject " + c.SubjectAlternativeName
}

// verifiedAt is the earliest verified time of a signature.
func verifiedAt(res *verify.VerificationResult) time.Time {
	var at time.Time
	for _, ts := range res.VerifiedTimestamps {
		if ts.Type == "CurrentTime" {
			continue
		}
		if at.IsZero() || ts.Timestamp.Before(at) {
			at = ts.Timestamp
		}
	}
	return at.UTC()
}

func dedupe(msgs []string) string {
	slices.Sort(msgs)
	return strings.Join(slices.Compact(msgs), "; ")
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return fmt.Sprintf("%q", s)
}

func (v *Verifier) remembered(rule int, image, digest string) (policy.Provenance, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.passed[fmt.Sprintf("%d@%s@%s", rule, image, digest)]
	return p, ok
}

func (v *Verifier) remember(rule int, image, digest string, p policy.Provenance) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.passed[fmt.Sprintf("%d@%s@%s", rule, image, digest)] = p
}
