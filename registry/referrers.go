package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Bounds on what a signature lookup reads: signatures and attestations are
// kilobytes, and a registry that answers with more is not read further.
const (
	// MaxReferrers bounds the referrers listed for one digest.
	MaxReferrers = 256
	// MaxLayers bounds the layers an Artifact lists.
	MaxLayers = 64
	// MaxBlob bounds the bytes Blob reads.
	MaxBlob = 4 << 20
)

// Referrer is a manifest whose subject is a digest (OCI 1.1): a signature,
// an attestation, an SBOM.
type Referrer struct {
	Digest       string            `json:"digest"`
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType"`
	Annotations  map[string]string `json:"annotations"`
}

// Artifact is a manifest read for what it carries rather than run: its
// artifact type, its layers and their annotations.
type Artifact struct {
	Digest       string
	ArtifactType string
	// Subject is the digest the manifest refers to, "" when none.
	Subject string
	Layers  []Layer
}

// Layer is one layer (blob) of an Artifact.
type Layer struct {
	Digest      string
	MediaType   string
	Size        int64
	Annotations map[string]string
}

// Referrers lists the manifests that refer to ref (repo@sha256:...): from
// the registry's Referrers API, or, where the registry has none, from the
// referrers tag schema (the index tagged sha256-<hex>). A digest nothing
// refers to has no referrers and no error.
func (c *Client) Referrers(ctx context.Context, ref string) ([]Referrer, error) {
	const op = "listing the referrers of"
	ctx, cancel := c.call(ctx)
	defer cancel()
	d, err := c.parseDigest(op, ref)
	if err != nil {
		return nil, err
	}
	r := name.Reference(d)
	puller, err := c.pullerFor(ctx, r.Context())
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	// ggcr asks the Referrers API first and reads the fallback tag when
	// the registry answers that it has none.
	idx, err := remote.Referrers(d, remote.WithContext(ctx), remote.Reuse(puller))
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	if len(m.Manifests) > MaxReferrers {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), fmt.Errorf("%d referrers, more than the %d pinbot reads", len(m.Manifests), MaxReferrers))
	}
	out := make([]Referrer, 0, len(m.Manifests))
	for _, desc := range m.Manifests {
		out = append(out, Referrer{
			Digest:       desc.Digest.String(),
			MediaType:    string(desc.MediaType),
			ArtifactType: desc.ArtifactType,
			Annotations:  desc.Annotations,
		})
	}
	return out, nil
}

// Artifact reads the manifest ref names (a tag or a digest) as an
// artifact: its type, subject and layers. It returns ErrNotFound when the
// registry has no such manifest, and refuses an index.
func (c *Client) Artifact(ctx context.Context, ref string) (Artifact, error) {
	const op = "reading the artifact"
	ctx, cancel := c.call(ctx)
	defer cancel()
	r, err := c.parse(ref)
	if err != nil {
		return Artifact{}, c.fail(op, ref, "", fmt.Errorf("parsing reference: %w", err))
	}
	puller, err := c.pullerFor(ctx, r.Context())
	if err != nil {
		return Artifact{}, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	rd, err := puller.Get(ctx, r)
	if err != nil {
		return Artifact{}, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	if rd.MediaType.IsIndex() {
		return Artifact{}, c.fail(op, ref, r.Context().RegistryStr(), fmt.Errorf("it is an index (%s), not a manifest", rd.MediaType))
	}
	var m struct {
		v1.Manifest
		ArtifactType string `json:"artifactType"`
	}
	if err := json.Unmarshal(rd.Manifest, &m); err != nil {
		return Artifact{}, c.fail(op, ref, r.Context().RegistryStr(), fmt.Errorf("decoding the manifest: %w", err))
	}
	if len(m.Layers) > MaxLayers {
		return Artifact{}, c.fail(op, ref, r.Context().RegistryStr(), fmt.Errorf("%d layers, more than the %d pinbot reads", len(m.Layers), MaxLayers))
	}
	a := Artifact{Digest: rd.Digest.String(), ArtifactType: m.ArtifactType}
	if a.ArtifactType == "" {
		a.ArtifactType = string(m.Config.ArtifactType)
	}
	if m.Subject != nil {
		a.Subject = m.Subject.Digest.String()
	}
	for _, l := range m.Layers {
		a.Layers = append(a.Layers, Layer{Digest: l.Digest.String(), MediaType: string(l.MediaType), Size: l.Size, Annotations: l.Annotations})
	}
	return a, nil
}

// Blob reads the blob ref names (repo@sha256:...), at most MaxBlob bytes,
// and checks it against its digest.
func (c *Client) Blob(ctx context.Context, ref string) ([]byte, error) {
	const op = "reading the blob"
	ctx, cancel := c.call(ctx)
	defer cancel()
	d, err := c.parseDigest(op, ref)
	if err != nil {
		return nil, err
	}
	r := name.Reference(d)
	want, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return nil, c.fail(op, ref, "", err)
	}
	puller, err := c.pullerFor(ctx, r.Context())
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	l, err := puller.Layer(ctx, d)
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxBlob+1))
	if err != nil {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	if len(data) > MaxBlob {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), fmt.Errorf("larger than the %d MiB pinbot reads", MaxBlob>>20))
	}
	got, _, err := v1.SHA256(bytes.NewReader(data))
	if err != nil || got != want {
		return nil, c.fail(op, ref, r.Context().RegistryStr(), fmt.Errorf("%w: the blob hashes to %s", ErrDigestMismatch, got))
	}
	return data, nil
}

// parseDigest parses ref, which must name a digest (repo@sha256:...).
func (c *Client) parseDigest(op, ref string) (name.Digest, error) {
	r, err := c.parse(ref)
	if err != nil {
		return name.Digest{}, c.fail(op, ref, "", fmt.Errorf("parsing reference: %w", err))
	}
	d, ok := r.(name.Digest)
	if !ok {
		return name.Digest{}, c.fail(op, ref, "", fmt.Errorf("want a digest reference"))
	}
	return d, nil
}
