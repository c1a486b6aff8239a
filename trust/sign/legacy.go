package sign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"pinbot.dev/pinbot/internal/redact"
)

// The legacy attestation format, which cosign attest wrote before
// Sigstore bundles and which Sigstore's policy-controller still reads
// for key-signed attestations: an image tagged sha256-<hex>.att beside
// the subject, one layer per attestation, each a DSSE envelope.
const (
	// EnvelopeMediaType is a legacy attestation layer's.
	EnvelopeMediaType = "application/vnd.dsse.envelope.v1+json"
	// predicateTypeAnnotation names a layer's predicate type.
	predicateTypeAnnotation = "predicateType"
)

// Envelope is a DSSE envelope as cosign's legacy attestations carry it.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     []byte      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an Envelope.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   []byte `json:"sig"`
}

// EnvelopeOf is the DSSE envelope inside a Sigstore bundle's JSON, as
// the legacy format's layer carries it: the same signature over the same
// statement.
func EnvelopeOf(bundle []byte) ([]byte, error) {
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(bundle, &pb); err != nil {
		return nil, fmt.Errorf("reading the bundle: %w", err)
	}
	env := pb.GetDsseEnvelope()
	if env == nil {
		return nil, errors.New("the bundle holds no DSSE envelope")
	}
	e := Envelope{PayloadType: env.GetPayloadType(), Payload: env.GetPayload()}
	for _, s := range env.GetSignatures() {
		e.Signatures = append(e.Signatures, Signature{KeyID: s.GetKeyid(), Sig: s.GetSig()})
	}
	return json.Marshal(e)
}

// LegacyTag is the tag of subject's legacy attestations.
func LegacyTag(subject name.Digest) name.Tag {
	return subject.Context().Tag(subject.DigestStr()[:len("sha256")] + "-" + subject.DigestStr()[len("sha256:"):] + ".att")
}

// AttachLegacy adds envelope (a DSSE envelope of a statement of
// predicateType) to subject's legacy attestations, as cosign attest
// wrote them, keeping those of the attestations already there for which
// keep says so (it gets each one's envelope). It returns the digest of
// the attestations' image.
func AttachLegacy(ctx context.Context, subject name.Digest, predicateType string, envelope []byte, keep func(envelope []byte) bool, opts ...remote.Option) (name.Digest, error) {
	opts = append(opts, remote.WithContext(ctx))
	tag := LegacyTag(subject)
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	old, err := remote.Image(tag, opts...)
	var te *transport.Error
	switch {
	case errors.As(err, &te) && te.StatusCode == http.StatusNotFound:
	case err != nil:
		return name.Digest{}, fmt.Errorf("reading the legacy attestations of %s: %w", subject, redact.Error(err))
	default:
		if img, err = kept(img, old, keep); err != nil {
			return name.Digest{}, fmt.Errorf("reading the legacy attestations of %s: %w", subject, redact.Error(err))
		}
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: static.NewLayer(envelope, EnvelopeMediaType),
		// cosign's readers require the signature annotation on every
		// layer; an attestation's is empty (the envelope signs).
		Annotations: map[string]string{predicateTypeAnnotation: predicateType, "dev.cosignproject.cosign/signature": ""},
	})
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("writing the legacy attestations of %s: %w", subject, redact.Error(err))
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return subject.Context().Digest(d.String()), nil
}

// kept appends to img the layers of old that keep keeps, with their
// annotations.
func kept(img, old v1.Image, keep func([]byte) bool) (v1.Image, error) {
	m, err := old.Manifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Layers {
		l, err := old.LayerByDigest(d.Digest)
		if err != nil {
			return nil, err
		}
		data, err := readAll(l)
		if err != nil {
			return nil, err
		}
		if !keep(data) {
			continue
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(data, d.MediaType), Annotations: d.Annotations}); err != nil {
			return nil, err
		}
	}
	return img, nil
}
