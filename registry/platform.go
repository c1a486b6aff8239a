package registry

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/internal/imageref"
)

// platformOf converts a go-containerregistry platform; nil stays zero.
func platformOf(p *v1.Platform) imageref.Platform {
	if p == nil {
		return imageref.Platform{}
	}
	return imageref.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}
}

// isAttestation reports whether an index entry is an attestation manifest
// (buildx provenance or SBOM), not an image for a platform.
func isAttestation(d v1.Descriptor) bool {
	if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

// pick chooses the index entry for want among manifests. It never falls
// back to the first entry: the OS and architecture must match, after
// normalisation. Among those, in order of preference:
//  1. the entry whose variant equals want's (defaults filled in, so a
//     request for linux/arm64 takes linux/arm64 and linux/arm64/v8 alike);
//  2. for 32-bit arm, the nearest lower variant (v7 runs v6 and v5
//     images), as containerd picks;
//  3. only when want names no variant: any other variant of the
//     architecture, the first in index order.
//
// Attestation manifests and entries without a platform never match.
func pick(manifests []v1.Descriptor, want imageref.Platform) (v1.Descriptor, bool) {
	w := want.Normalized()
	best, bestRank := -1, 0
	for i, d := range manifests {
		if d.Platform == nil || isAttestation(d) {
			continue
		}
		got := platformOf(d.Platform).Normalized()
		if got.OS != w.OS || got.Architecture != w.Architecture {
			continue
		}
		rank, ok := variantRank(w, got, want.Variant == "")
		if !ok {
			continue
		}
		if best < 0 || rank < bestRank {
			best, bestRank = i, rank
		}
	}
	if best < 0 {
		return v1.Descriptor{}, false
	}
	return manifests[best], true
}

// variantRank ranks how well got's variant serves want's; lower is better.
func variantRank(want, got imageref.Platform, anyVariant bool) (int, bool) {
	if got.Variant == want.Variant {
		return 0, true
	}
	if want.Architecture == "arm" {
		w, werr := strconv.Atoi(strings.TrimPrefix(want.Variant, "v"))
		g, gerr := strconv.Atoi(strings.TrimPrefix(got.Variant, "v"))
		if werr == nil && gerr == nil && g < w {
			return w - g, true
		}
	}
	if anyVariant {
		return 100, true
	}
	return 0, false
}

// ChildFor returns the child of the index indexRef names for platform p. It
// never takes the first entry on faith and never returns an attestation
// manifest: OS and architecture must match (aliases such as x86_64 and
// aarch64 understood), and the variant must match with defaults filled in
// (arm64 means arm64/v8, arm means arm/v7, amd64 means amd64/v1). For 32-bit
// arm the nearest lower variant also serves, as containerd picks; when p
// names no variant, any variant of the architecture serves, the first in
// index order. An empty p.OS means linux. It returns ErrNotIndex for a
// single manifest and ErrNoPlatform when no child fits.
func (c *Client) ChildFor(ctx context.Context, indexRef string, p imageref.Platform) (Child, error) {
	const op = "finding the platform child of"
	ctx, cancel := c.call(ctx)
	defer cancel()
	r, err := c.parse(indexRef)
	if err != nil {
		return Child{}, c.fail(op, indexRef, "", fmt.Errorf("parsing reference: %w", err))
	}
	child, err := c.childFor(ctx, r, p)
	if err != nil {
		return Child{}, c.fail(op, indexRef, r.Context().RegistryStr(), err)
	}
	return child, nil
}

func (c *Client) childFor(ctx context.Context, r name.Reference, p imageref.Platform) (Child, error) {
	puller, err := c.pullerFor(ctx, r.Context())
	if err != nil {
		return Child{}, err
	}
	rd, err := puller.Get(ctx, r)
	if err != nil {
		return Child{}, err
	}
	if !rd.MediaType.IsIndex() {
		return Child{}, fmt.Errorf("%w: it is a %s", ErrNotIndex, rd.MediaType)
	}
	return childIn(rd.Manifest, rd.Digest.String(), p)
}

// childIn picks the child for p from the raw index manifest with the given
// digest.
func childIn(manifest []byte, digest string, p imageref.Platform) (Child, error) {
	if p.OS == "" {
		p.OS = "linux"
	}
	if p.Architecture == "" {
		return Child{}, fmt.Errorf("platform %q names no architecture", p)
	}
	im, err := parseIndex(manifest, digest)
	if err != nil {
		return Child{}, err
	}
	d, ok := pick(im.Manifests, p)
	if !ok {
		return Child{}, fmt.Errorf("%w %s in index %s (it has %s)", ErrNoPlatform, p, digest, strings.Join(platformsIn(im.Manifests), ", "))
	}
	return childOf(d), nil
}

// platformsIn lists the platforms of an index's image entries, for errors.
func platformsIn(manifests []v1.Descriptor) []string {
	var out []string
	for _, d := range manifests {
		if d.Platform != nil && !isAttestation(d) {
			out = append(out, platformOf(d.Platform).String())
		}
	}
	if len(out) == 0 {
		return []string{"no platform entries"}
	}
	slices.Sort(out)
	return out
}

func childOf(d v1.Descriptor) Child {
	return Child{
		Platform:  platformOf(d.Platform),
		Digest:    d.Digest.String(),
		MediaType: string(d.MediaType),
		Size:      d.Size,
	}
}
