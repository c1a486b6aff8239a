package imagebuild

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/redact"
)

// Push writes idx, its images and their blobs to ref (a tag) and returns
// the index's digest reference, repository@sha256:…. Blobs the registry
// holds already, such as the base layer a second platform shares, are not
// sent again. opts add authentication; the default is anonymous.
func Push(ctx context.Context, ref name.Reference, idx v1.ImageIndex, opts ...remote.Option) (name.Digest, error) {
	d, err := idx.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("digesting the index: %w", err)
	}
	opts = append(opts, remote.WithContext(ctx))
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", ref, redact.Error(err))
	}
	return ref.Context().Digest(d.String()), nil
}
