package registry

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/internal/imageref"
)

// Candidates is what one image reference offers a node of one platform:
// every manifest the node's runtime could have chosen, never one picked on
// the verifier's behalf.
type Candidates struct {
	// Index is true when the reference names an image index.
	Index bool
	// Children are the index's image children for the platform, in index
	// order: OS and architecture equal after normalisation, and, when the
	// platform names a variant, a variant that serves it (see ChildFor).
	// With no variant asked for, every variant of the architecture is a
	// candidate: Nodes do not report theirs. Empty for a single manifest.
	Children []Child
	// Configs are the config digests: one per child, in the same order,
	// for an index; the manifest's own for a single manifest. Filled only
	// when asked for.
	Configs []string
}

// Candidates returns what ref offers platform p (an empty p.OS means
// linux), with the config digests when configs is set. Unlike ChildFor it
// never chooses among several children: that is the caller's question.
func (c *Client) Candidates(ctx context.Context, ref string, p imageref.Platform, configs bool) (Candidates, error) {
	const op = "listing the platform candidates of"
	ctx, cancel := c.call(ctx)
	defer cancel()
	r, err := c.parse(ref)
	if err != nil {
		return Candidates{}, c.fail(op, ref, "", fmt.Errorf("parsing reference: %w", err))
	}
	out, err := c.candidates(ctx, r, p, configs)
	if err != nil {
		return Candidates{}, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	return out, nil
}

func (c *Client) candidates(ctx context.Context, r name.Reference, p imageref.Platform, configs bool) (Candidates, error) {
	puller, err := c.pullerFor(ctx, r.Context())
	if err != nil {
		return Candidates{}, err
	}
	rd, err := puller.Get(ctx, r)
	if err != nil {
		return Candidates{}, err
	}
	if !rd.MediaType.IsIndex() {
		out := Candidates{}
		if configs {
			cfg, err := configOf(rd.Manifest)
			if err != nil {
				return Candidates{}, err
			}
			out.Configs = []string{cfg}
		}
		return out, nil
	}
	im, err := parseIndex(rd.Manifest, rd.Digest.String())
	if err != nil {
		return Candidates{}, err
	}
	out := Candidates{Index: true}
	for _, d := range servable(im.Manifests, p) {
		out.Children = append(out.Children, childOf(d))
		if !configs {
			continue
		}
		cd, err := puller.Get(ctx, r.Context().Digest(d.Digest.String()))
		if err != nil {
			return Candidates{}, fmt.Errorf("reading child %s: %w", d.Digest, err)
		}
		cfg, err := configOf(cd.Manifest)
		if err != nil {
			return Candidates{}, fmt.Errorf("child %s: %w", d.Digest, err)
		}
		out.Configs = append(out.Configs, cfg)
	}
	return out, nil
}

// servable lists the image entries of an index that a node of platform
// want could run, in index order.
func servable(manifests []v1.Descriptor, want imageref.Platform) []v1.Descriptor {
	if want.OS == "" {
		want.OS = "linux"
	}
	w := want.Normalized()
	var out []v1.Descriptor
	for _, d := range manifests {
		if d.Platform == nil || isAttestation(d) {
			continue
		}
		got := platformOf(d.Platform).Normalized()
		if got.OS != w.OS || got.Architecture != w.Architecture {
			continue
		}
		if _, ok := variantRank(w, got, want.Variant == ""); ok {
			out = append(out, d)
		}
	}
	return out
}

// configOf reads the config digest of a raw image manifest.
func configOf(manifest []byte) (string, error) {
	m, err := v1.ParseManifest(bytes.NewReader(manifest))
	if err != nil {
		return "", fmt.Errorf("parsing manifest: %w", err)
	}
	if m.Config.Digest.Hex == "" {
		return "", fmt.Errorf("manifest has no config")
	}
	return m.Config.Digest.String(), nil
}
