package registry

import (
	"bytes"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A registry is a peer pinbot does not control: every manifest it serves
// is bounded in bytes and an index in entries, before anything is parsed.
const (
	// MaxManifestBytes bounds one manifest, index or referrers list, as
	// containerd bounds manifests it pulls (4 MiB). A larger body is
	// refused from its Content-Length before it is read, or after
	// MaxManifestBytes+1 bytes when the registry sends none.
	MaxManifestBytes = 4 << 20
	// MaxIndexEntries bounds the entries of an image index pinbot reads.
	// Multi-platform images have tens; an index with more is refused,
	// naming the count.
	MaxIndexEntries = 256
	// childReads is how many child manifests of one index Describe and
	// Candidates read at once.
	childReads = 4
)

// ErrTooLarge: a registry served a manifest or index over pinbot's bounds
// (MaxManifestBytes, MaxIndexEntries).
var ErrTooLarge = errors.New("over pinbot's bound")

// parseIndex parses the index manifest with the given digest, refusing
// one of more than MaxIndexEntries entries.
func parseIndex(manifest []byte, digest string) (*v1.IndexManifest, error) {
	im, err := v1.ParseIndexManifest(bytes.NewReader(manifest))
	if err != nil {
		return nil, fmt.Errorf("parsing index %s: %w", digest, err)
	}
	if n := len(im.Manifests); n > MaxIndexEntries {
		return nil, fmt.Errorf("index %s has %d entries: %w of %d", digest, n, ErrTooLarge, MaxIndexEntries)
	}
	return im, nil
}
