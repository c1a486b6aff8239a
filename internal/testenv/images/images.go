// Package images makes small random container images and pushes them,
// alone or as a multi-platform index, for tests that need a registry to
// hold something: Gitea's registry, or an in-memory one.
package images

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Edit changes a random image's config: its platform, created time or
// labels.
type Edit func(*v1.ConfigFile)

// OnPlatform sets the config's platform to p.
func OnPlatform(p v1.Platform) Edit {
	return func(cf *v1.ConfigFile) { cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant }
}

// Random is a small random image (one layer) with edits applied to its
// config; each call gives another digest.
func Random(edits ...Edit) (v1.Image, error) {
	img, err := random.Image(256, 1)
	if err != nil || len(edits) == 0 {
		return img, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	for _, e := range edits {
		e(cf)
	}
	return mutate.ConfigFile(img, cf)
}

// Pushed is what Push pushed: the manifest's digest and its config's.
type Pushed struct {
	Digest, Config string
}

// Push pushes img to ref (REGISTRY/NAME:TAG or @DIGEST; plain HTTP is
// allowed, as test registries serve it).
func Push(ref string, img v1.Image, opts ...remote.Option) (Pushed, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return Pushed{}, fmt.Errorf("parsing %q: %w", ref, err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		return Pushed{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return Pushed{}, err
	}
	c, err := img.ConfigName()
	if err != nil {
		return Pushed{}, err
	}
	return Pushed{Digest: d.String(), Config: c.String()}, nil
}

// Index is what PushIndex pushed: the index's digest, and its children's
// manifest and config digests by architecture ("unknown" is the
// attestation manifest's).
type Index struct {
	Digest   string
	Children map[string]string
	Configs  map[string]string
}

// AttestationPlatform is the platform buildx gives attestation manifests
// in an index.
var AttestationPlatform = v1.Platform{OS: "unknown", Architecture: "unknown"}

// PushIndex pushes to ref an OCI index of children, each under the
// platform its config names, after an attestation manifest as buildx
// writes one (AttestationPlatform): a reader that takes the first entry,
// and not its platform's, gets the attestation.
func PushIndex(ref string, children []v1.Image, opts ...remote.Option) (Index, error) {
	out := Index{Children: map[string]string{}, Configs: map[string]string{}}
	att, err := Random(OnPlatform(AttestationPlatform))
	if err != nil {
		return out, err
	}
	adds := []mutate.IndexAddendum{{Add: att, Descriptor: v1.Descriptor{Platform: &AttestationPlatform,
		Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest"}}}}
	for _, img := range append([]v1.Image{att}, children...) {
		cf, err := img.ConfigFile()
		if err != nil {
			return out, err
		}
		d, err := img.Digest()
		if err != nil {
			return out, err
		}
		c, err := img.ConfigName()
		if err != nil {
			return out, err
		}
		out.Children[cf.Architecture], out.Configs[cf.Architecture] = d.String(), c.String()
		if img != att {
			p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return out, fmt.Errorf("parsing %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, opts...); err != nil {
		return out, fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return out, err
	}
	out.Digest = d.String()
	return out, nil
}

// RandomIndex pushes to ref an index (PushIndex) of one random image per
// platform.
func RandomIndex(ref string, platforms []v1.Platform, opts ...remote.Option) (Index, error) {
	children := make([]v1.Image, 0, len(platforms))
	for _, p := range platforms {
		img, err := Random(OnPlatform(p))
		if err != nil {
			return Index{}, err
		}
		children = append(children, img)
	}
	return PushIndex(ref, children, opts...)
}
