package trust

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"pinbot.dev/pinbot/registry"
)

// Registry is what Check reads from the registry; *registry.Client
// implements it.
type Registry interface {
	Referrers(ctx context.Context, ref string) ([]registry.Referrer, error)
	Artifact(ctx context.Context, ref string) (registry.Artifact, error)
	Blob(ctx context.Context, ref string) ([]byte, error)
	Describe(ctx context.Context, ref string) (registry.Image, error)
}

// Formats a signature is found in.
const (
	FormatBundle = "Sigstore bundle (OCI referrer)"
	FormatLegacy = "cosign signature tag (.sig)"
	// FormatLegacyAttestation is cosign attest v2's: a DSSE envelope per
	// layer of the image tagged sha256-<hex>.att.
	FormatLegacyAttestation = "cosign attestation tag (.att)"
)

// CosignSign is the predicate type of cosign v3's image signatures: an
// in-toto statement over the image digest, with an empty predicate.
const CosignSign = "https://sigstore.dev/cosign/sign/v1"

// Media types and annotations of the formats.
const (
	bundleMediaPrefix   = "application/vnd.dev.sigstore.bundle"
	simpleSigningMedia  = "application/vnd.dev.cosign.simplesigning.v1+json"
	envelopeMedia       = "application/vnd.dsse.envelope.v1+json"
	legacySignatureKey  = "dev.cosignproject.cosign/signature"
	legacyCertKey       = "dev.sigstore.cosign/certificate"
	legacyRekorKey      = "dev.sigstore.cosign/bundle"
	legacyTimestampKey  = "dev.sigstore.cosign/rfc3161timestamp"
	emptyMediaType      = "application/vnd.oci.empty.v1+json"
	maxCandidates       = 32
	simpleSigningType   = "cosign container image signature"
	cosignPayloadDigest = "docker-manifest-digest"
)

// candidate is one signature or attestation found for a digest.
type candidate struct {
	format string
	where  string // the referrer's or tag's reference, for refusals
	entity verify.SignedEntity
	// predicateType is the in-toto statement's ("" for a legacy
	// signature, which is a plain message signature).
	predicateType string
	// payload is a legacy signature's signed payload.
	payload []byte
	// keyless: a legacy signature made with a certificate.
	keyless bool
}

// find lists the signatures and attestations attached to image@digest:
// bundles among its referrers, and the legacy signature tag.
func find(ctx context.Context, reg Registry, image, digest string) ([]candidate, error) {
	ref := image + "@" + digest
	refs, err := reg.Referrers(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("listing the signatures of %s: %w", ref, err)
	}
	var out []candidate
	for _, r := range refs {
		if !mayBeBundle(r) || len(out) >= maxCandidates {
			continue
		}
		where := image + "@" + r.Digest
		art, err := reg.Artifact(ctx, where)
		if err != nil {
			return nil, fmt.Errorf("reading the signature %s: %w", where, err)
		}
		for _, l := range art.Layers {
			if !strings.HasPrefix(l.MediaType, bundleMediaPrefix) {
				continue
			}
			data, err := reg.Blob(ctx, image+"@"+l.Digest)
			if err != nil {
				return nil, fmt.Errorf("reading the signature %s: %w", where, err)
			}
			out = append(out, bundleCandidate(where, data))
		}
	}
	legacy, err := findLegacy(ctx, reg, image, digest)
	if err != nil {
		return nil, err
	}
	out = append(out, legacy...)
	attestations, err := findLegacyAttestations(ctx, reg, image, digest)
	if err != nil {
		return nil, err
	}
	return append(out, attestations...), nil
}

// mayBeBundle reports whether a referrer may hold a Sigstore bundle: its
// artifact type says so, or it says nothing more than the empty config
// (registries that take the artifact type from the config's media type
// report cosign's referrers so), and then its layers tell.
func mayBeBundle(r registry.Referrer) bool {
	switch {
	case strings.HasPrefix(r.ArtifactType, bundleMediaPrefix):
		return true
	case r.ArtifactType == "" || r.ArtifactType == emptyMediaType:
		return true
	}
	return false
}

// bundleCandidate parses a Sigstore bundle; one that does not parse is
// kept as a candidate that fails, so the refusal can say why.
func bundleCandidate(where string, data []byte) candidate {
	c := candidate{format: FormatBundle, where: where}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		c.entity = broken{fmt.Errorf("not a Sigstore bundle: %w", err)}
		return c
	}
	c.entity = &b
	if env, err := b.Envelope(); err == nil {
		if st, err := env.Statement(); err == nil {
			c.predicateType = st.GetPredicateType()
		}
	}
	return c
}

// findLegacy reads the legacy signature tag sha256-<hex>.sig: one layer
// per signature, the payload as the blob and the signature (and, for
// keyless, the certificate) as annotations.
func findLegacy(ctx context.Context, reg Registry, image, digest string) ([]candidate, error) {
	where := image + ":" + strings.Replace(digest, ":", "-", 1) + ".sig"
	art, err := reg.Artifact(ctx, where)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the signature tag %s: %w", where, err)
	}
	var out []candidate
	for _, l := range art.Layers {
		if l.MediaType != simpleSigningMedia || len(out) >= maxCandidates {
			continue
		}
		c := candidate{format: FormatLegacy, where: where, keyless: l.Annotations[legacyCertKey] != ""}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[legacySignatureKey])
		if err != nil || len(sig) == 0 {
			c.entity = broken{errors.New("the layer has no signature annotation")}
			out = append(out, c)
			continue
		}
		if c.payload, err = reg.Blob(ctx, image+"@"+l.Digest); err != nil {
			return nil, fmt.Errorf("reading the signature tag %s: %w", where, err)
		}
		sum := sha256.Sum256(c.payload)
		c.entity = legacy{content: bundle.NewMessageSignature(sum[:], "SHA2_256", sig)}
		out = append(out, c)
	}
	return out, nil
}

// findLegacyAttestations reads the legacy attestation tag
// sha256-<hex>.att: one layer per attestation, each a DSSE envelope,
// its predicate type an annotation.
func findLegacyAttestations(ctx context.Context, reg Registry, image, digest string) ([]candidate, error) {
	where := image + ":" + strings.Replace(digest, ":", "-", 1) + ".att"
	art, err := reg.Artifact(ctx, where)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the attestation tag %s: %w", where, err)
	}
	var out []candidate
	for _, l := range art.Layers {
		if l.MediaType != envelopeMedia || len(out) >= maxCandidates {
			continue
		}
		c := candidate{format: FormatLegacyAttestation, where: where, predicateType: l.Annotations["predicateType"]}
		data, err := reg.Blob(ctx, image+"@"+l.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading the attestation tag %s: %w", where, err)
		}
		var e dsse.Envelope
		if err := json.Unmarshal(data, &e); err != nil {
			c.entity = broken{fmt.Errorf("not a DSSE envelope: %w", err)}
		} else {
			c.entity = legacy{content: &bundle.Envelope{Envelope: &e}}
		}
		out = append(out, c)
	}
	return out, nil
}

// legacy is a legacy key signature or attestation as sigstore-go
// verifies it: a message signature over the payload, or a DSSE envelope,
// by a public key, with no log entry or timestamp (the key is the
// trust).
type legacy struct {
	content verify.SignatureContent
}

func (legacy) HasInclusionPromise() bool                            { return false }
func (legacy) HasInclusionProof() bool                              { return false }
func (legacy) Timestamps() ([][]byte, error)                        { return nil, nil }
func (legacy) TlogEntries() ([]*tlog.Entry, error)                  { return nil, nil }
func (legacy) Version() (string, error)                             { return "v0.3", nil }
func (l legacy) SignatureContent() (verify.SignatureContent, error) { return l.content, nil }
func (legacy) VerificationContent() (verify.VerificationContent, error) {
	return &bundle.PublicKey{}, nil
}

// broken is a candidate that could not be read; verifying it fails with
// why.
type broken struct{ err error }

func (broken) HasInclusionPromise() bool                                  { return false }
func (broken) HasInclusionProof() bool                                    { return false }
func (b broken) Timestamps() ([][]byte, error)                            { return nil, b.err }
func (b broken) TlogEntries() ([]*tlog.Entry, error)                      { return nil, b.err }
func (b broken) Version() (string, error)                                 { return "", b.err }
func (b broken) SignatureContent() (verify.SignatureContent, error)       { return nil, b.err }
func (b broken) VerificationContent() (verify.VerificationContent, error) { return nil, b.err }
