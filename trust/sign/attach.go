package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/internal/redact"
)

// emptyMediaType is an OCI artifact's empty config.
const emptyMediaType = types.MediaType("application/vnd.oci.empty.v1+json")

// Artifact is what Attach writes about a subject: Data of MediaType, an
// artifact of ArtifactType with Annotations.
type Artifact struct {
	ArtifactType string
	MediaType    types.MediaType
	Data         []byte
	Annotations  map[string]string
}

// Attach writes a as an OCI 1.1 referrer of subject: an artifact
// manifest whose one layer is a's data and whose config is empty. A
// registry without the Referrers API gets the tag schema's index
// (sha256-<hex>), as go-containerregistry writes it. It returns the
// referrer's digest.
func Attach(ctx context.Context, subject name.Digest, a Artifact, opts ...remote.Option) (name.Digest, error) {
	opts = append(opts, remote.WithContext(ctx))
	desc, err := remote.Head(subject, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("reading the subject %s: %w", subject, redact.Error(err))
	}
	var descs []v1.Descriptor
	for _, l := range []v1.Layer{static.NewLayer([]byte("{}"), emptyMediaType), static.NewLayer(a.Data, a.MediaType)} {
		if err := remote.WriteLayer(subject.Context(), l, opts...); err != nil {
			return name.Digest{}, fmt.Errorf("uploading the %s of %s: %w", a.ArtifactType, subject, redact.Error(err))
		}
		d, _ := l.Digest()
		size, _ := l.Size()
		mt, _ := l.MediaType()
		descs = append(descs, v1.Descriptor{MediaType: mt, Digest: d, Size: size})
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  a.ArtifactType,
		Config:        descs[0],
		Layers:        descs[1:],
		Subject:       &v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size},
		Annotations:   a.Annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return name.Digest{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return name.Digest{}, err
	}
	ref := subject.Context().Digest(h.String())
	if err := remote.Put(ref, rawManifest{raw, m.MediaType}, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("writing the %s of %s: %w", a.ArtifactType, subject, redact.Error(err))
	}
	return ref, nil
}

// Image signs subject (an image, an index or any artifact) with k and
// attaches the signature, as `cosign sign --key` v3 does.
func Image(ctx context.Context, k *Key, subject name.Digest, opts ...remote.Option) (name.Digest, error) {
	return Attest(ctx, k, subject, CosignSign, nil, nil, opts...)
}

// Attest signs the statement of predicate (of predicateType) about
// subject, and the other digests of its repository also (platform
// children, say), with k and attaches it to subject, as `cosign attest
// --key` v3 does.
func Attest(ctx context.Context, k *Key, subject name.Digest, predicateType string, predicate any, also []string, opts ...remote.Option) (name.Digest, error) {
	bundle, err := k.Attestation(subject, predicateType, predicate, also)
	if err != nil {
		return name.Digest{}, err
	}
	return AttachBundle(ctx, subject, predicateType, bundle, nil, opts...)
}

// Attestation is the Sigstore bundle of the statement of predicate (of
// predicateType) about subject and the other digests of its repository
// also, signed with k.
func (k *Key) Attestation(subject name.Digest, predicateType string, predicate any, also []string) ([]byte, error) {
	var subjects []Subject
	for _, d := range append([]string{subject.DigestStr()}, also...) {
		s, err := DigestSubject(subject.Context().Name(), d)
		if err != nil {
			return nil, err
		}
		subjects = append(subjects, s)
	}
	st, err := NewStatement(predicateType, predicate, subjects...)
	if err != nil {
		return nil, err
	}
	return k.Statement(st)
}

// AttachBundle attaches an attestation's bundle (of a statement of
// predicateType) to subject as cosign attest v3 does, with more
// annotations on its manifest, if any.
func AttachBundle(ctx context.Context, subject name.Digest, predicateType string, bundle []byte, more map[string]string, opts ...remote.Option) (name.Digest, error) {
	annotations, err := BundleAnnotations(predicateType, more)
	if err != nil {
		return name.Digest{}, err
	}
	return Attach(ctx, subject, Artifact{ArtifactType: BundleMediaType, MediaType: BundleMediaType, Data: bundle, Annotations: annotations}, opts...)
}

// BundleAnnotations are the annotations of an attestation bundle's
// manifest, as cosign attest v3 writes them, and more.
func BundleAnnotations(predicateType string, more map[string]string) (map[string]string, error) {
	annotations := map[string]string{
		"dev.sigstore.bundle.content":       "dsse-envelope",
		"dev.sigstore.bundle.predicateType": predicateType,
	}
	for k, v := range more {
		if _, ok := annotations[k]; ok {
			return nil, fmt.Errorf("annotation %s is cosign's", k)
		}
		annotations[k] = v
	}
	return annotations, nil
}

type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }
