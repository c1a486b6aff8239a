package registry

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/internal/imageref"
)

// Descriptor is what a reference resolves to.
type Descriptor struct {
	Reference  string `json:"reference"`  // normalised reference asked for, e.g. index.docker.io/library/nginx:1.27
	Repository string `json:"repository"` // normalised repository, e.g. index.docker.io/library/nginx
	Digest     string `json:"digest"`     // "sha256:<64 hex>" of the manifest or index
	MediaType  string `json:"mediaType"`
	Size       int64  `json:"size"` // bytes of the manifest or index itself
}

// Resolve resolves ref (a tag or a digest reference) to the digest and media
// type of what it names. It asks with HEAD first, which registries do not
// count against pull limits, and falls back to GET when HEAD fails with
// anything but 401, 403, 404 or 429, or answers without a digest. A manifest
// fetched by GET is checked against its digest.
func (c *Client) Resolve(ctx context.Context, ref string) (Descriptor, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	r, err := c.parse(ref)
	if err != nil {
		return Descriptor{}, c.fail("resolving", ref, "", fmt.Errorf("parsing reference: %w", err))
	}
	d, err := c.resolve(ctx, r)
	if err != nil {
		return Descriptor{}, c.fail("resolving", ref, r.Context().RegistryStr(), err)
	}
	return d, nil
}

// resolve is Resolve on a parsed reference.
func (c *Client) resolve(ctx context.Context, r name.Reference) (Descriptor, error) {
	puller, err := c.pullerFor(ctx, r.Context())
	if err != nil {
		return Descriptor{}, err
	}
	desc, err := puller.Head(ctx, r)
	if err != nil {
		if !headFallsBack(err) {
			return Descriptor{}, err
		}
		got, gerr := puller.Get(ctx, r)
		if gerr != nil {
			return Descriptor{}, gerr
		}
		desc = &got.Descriptor
	}
	if want, ok := r.(name.Digest); ok && desc.Digest.String() != want.DigestStr() {
		// ggcr and verifyTransport both check this; keep the promise local.
		return Descriptor{}, fmt.Errorf("%w: registry answered %s for %s", ErrDigestMismatch, desc.Digest, want.DigestStr())
	}
	return descriptorOf(r, *desc), nil
}

func descriptorOf(r name.Reference, d v1.Descriptor) Descriptor {
	return Descriptor{
		Reference:  normalisedRef(r),
		Repository: r.Context().Name(),
		Digest:     d.Digest.String(),
		MediaType:  string(d.MediaType),
		Size:       d.Size,
	}
}

// tagOf returns the tag a reference names, including the tag of a
// "repo:tag@sha256:..." reference, which go-containerregistry drops.
func tagOf(r name.Reference) string {
	switch r := r.(type) {
	case name.Tag:
		return r.TagStr()
	case name.Digest:
		_, tag, _ := imageref.Split(r.String())
		return tag
	}
	return ""
}

// normalisedRef is repository[:tag][@digest] in go-containerregistry's
// normal form.
func normalisedRef(r name.Reference) string {
	s := r.Context().Name()
	if t := tagOf(r); t != "" {
		s += ":" + t
	}
	if d, ok := r.(name.Digest); ok {
		s += "@" + d.DigestStr()
	}
	return s
}
