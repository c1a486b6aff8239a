package promote

import (
	"context"
	"errors"
	"fmt"

	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust/policy"
)

// errTagMoved means a tag CI says it pushed with a digest points to another
// digest in the registry now: someone pushed the tag again since the build.
var errTagMoved = errors.New("the tag moved since the build")

// errDigestNotFound means the digest to promote is not in the registry.
var errDigestNotFound = errors.New("the digest is not in the registry")

// Promotion is a digest checked against the registry, ready to be written
// into pins.
type Promotion struct {
	// Image is the normalised repository.
	Image string
	// Tag is the tag written into pins that carry one; "" leaves tags as
	// they are. It is the known tag when exactly one is known.
	Tag string
	// Tags are all the tags known to point at Digest.
	Tags []string
	// Digest is the promoted digest.
	Digest string
	// Source and File say where Digest came from.
	Source pr.Source
	File   string
	// Described is what the registry says Digest is.
	Described registry.Image
	// Trust is what the signature policy found: who signed Digest and
	// how it was built. Nil until checked (a rollback is not).
	Trust *policy.Provenance
}

// Verify checks an Input against the registry before anything is written:
// it resolves a tag-only input now, checks that the digest exists, and
// refuses with errTagMoved when a known tag points elsewhere now, unless
// allowTagMoved.
func Verify(ctx context.Context, reg Registry, in Input, allowTagMoved bool) (Promotion, error) {
	p := Promotion{Image: in.Image, Tags: in.Tags, Digest: in.Digest, Source: in.Source, File: in.File}
	if len(in.Tags) == 1 {
		p.Tag = in.Tags[0]
	}
	if p.Digest == "" {
		if len(in.Tags) == 0 {
			return Promotion{}, fmt.Errorf("promoting %s: no digest and no tag to resolve", in.Image)
		}
		ref := in.Image + ":" + in.Tags[0]
		d, err := reg.Resolve(ctx, ref)
		if err != nil {
			return Promotion{}, fmt.Errorf("resolving %s: %w", ref, err)
		}
		p.Digest = d.Digest
	}
	ref := in.Image + "@" + p.Digest
	img, descErr := reg.Describe(ctx, ref)
	if descErr != nil && !errors.Is(descErr, registry.ErrNotFound) {
		return Promotion{}, fmt.Errorf("checking %s in the registry: %w", ref, descErr)
	}
	gone := descErr != nil
	if in.Digest != "" {
		// The tags CI named must still point at the digest. Checked before
		// the digest's absence is reported: a moved tag explains it.
		for _, tag := range in.Tags {
			if err := checkTag(ctx, reg, in, tag, p.Digest, gone, allowTagMoved); err != nil {
				return Promotion{}, err
			}
		}
	}
	if gone {
		return Promotion{}, fmt.Errorf("checking %s: %w (from %s): %w", ref, errDigestNotFound, describeSource(in), descErr)
	}
	p.Described = img
	return p, nil
}

// checkTag refuses with errTagMoved when tag no longer points at digest,
// unless allowed.
func checkTag(ctx context.Context, reg Registry, in Input, tag, digest string, gone, allowed bool) error {
	tagRef := in.Image + ":" + tag
	d, err := reg.Resolve(ctx, tagRef)
	after := ""
	if gone {
		after = "; the built digest is no longer in the registry either"
	}
	switch {
	case errors.Is(err, registry.ErrNotFound):
		if !allowed || gone {
			return fmt.Errorf("checking tag %s: %w: the tag is gone from the registry (%s named it with %s)%s: %w",
				tagRef, errTagMoved, describeSource(in), digest, after, err)
		}
	case err != nil:
		return fmt.Errorf("checking tag %s: %w", tagRef, err)
	case d.Digest != digest && (!allowed || gone):
		return fmt.Errorf("checking tag %s: %w: %s says %s, the registry says %s now%s",
			tagRef, errTagMoved, describeSource(in), digest, d.Digest, after)
	}
	return nil
}

func describeSource(in Input) string {
	if in.File != "" {
		return fmt.Sprintf("the %s %q", in.Source.Describe(), in.File)
	}
	return "the " + in.Source.Describe()
}

// factsOf turns what the registry says into the pull request's image facts.
func factsOf(img registry.Image) pr.Facts {
	f := pr.Facts{
		Created:  img.Created,
		Revision: img.Revision,
		Source:   img.Source,
		Version:  img.Version,
		Index:    img.Index,
		Size:     img.Size,
	}
	for _, c := range img.Children {
		f.Platforms = append(f.Platforms, c.Platform.String())
	}
	if img.Platform != nil {
		f.Platforms = []string{img.Platform.String()}
	}
	return f
}

// Input is one digest to promote as CI handed it over, before it is checked
// against the registry.
type Input struct {
	// Image is the normalised repository, e.g. 127.0.0.1:3000/org/app.
	Image string
	// Tags are the tags CI says it pushed with this digest, in the order
	// given. When Digest is empty, Tags[0] is resolved at promotion time.
	Tags []string
	// Digest is "sha256:<64 hex>", or "" to resolve Tags[0].
	Digest string
	// Source says where Digest came from.
	Source pr.Source
	// File is the CI file Digest came from, if any.
	File string
}
