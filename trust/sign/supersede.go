package sign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/internal/redact"
)

// maxLayer bounds a legacy attestation layer read back: a statement is a
// few kilobytes.
const maxLayer = 4 << 20

// Supersede removes the referrers of subject that latest replaces:
// those whose annotations hold every pair of same, but latest. Verifiers refuse an image with too many referrers (Kyverno:
// 50), so an attestation that says again what a newer one says must go.
// On a registry without the Referrers API the tag schema's index is
// rewritten first, so no verifier meets a referrer that is gone. It
// returns how many it removed; an error says what could not be, and the
// newer attestation stands either way.
func Supersede(ctx context.Context, subject name.Digest, latest string, same map[string]string, opts ...remote.Option) (int, error) {
	opts = append(opts, remote.WithContext(ctx))
	idx, err := remote.Referrers(subject, opts...)
	if err != nil {
		return 0, fmt.Errorf("listing the referrers of %s: %w", subject, redact.Error(err))
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return 0, err
	}
	var gone []v1.Descriptor
	for _, d := range im.Manifests {
		// Annotations alone: some registries list a referrer's config
		// media type as its artifact type.
		if d.Digest.String() != latest && holds(d.Annotations, same) {
			gone = append(gone, d)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	fallback := subject.Context().Tag(strings.Replace(subject.DigestStr(), ":", "-", 1))
	if _, err := remote.Head(fallback, opts...); err == nil {
		im.Manifests = slices.DeleteFunc(im.Manifests, func(d v1.Descriptor) bool { return slices.ContainsFunc(gone, sameDigest(d)) })
		if err := remote.Put(fallback, index{im}, opts...); err != nil {
			return 0, fmt.Errorf("rewriting the referrers index %s: %w", fallback, redact.Error(err))
		}
	} else if te := (*transport.Error)(nil); !errors.As(err, &te) || te.StatusCode != http.StatusNotFound {
		return 0, fmt.Errorf("reading the referrers index %s: %w", fallback, redact.Error(err))
	}
	var errs []error
	for _, d := range gone {
		if err := remote.Delete(subject.Context().Digest(d.Digest.String()), opts...); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", d.Digest, redact.Error(err)))
		}
	}
	return len(gone) - len(errs), errors.Join(errs...)
}

func holds(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return len(want) > 0
}

func sameDigest(d v1.Descriptor) func(v1.Descriptor) bool {
	return func(o v1.Descriptor) bool { return o.Digest == d.Digest }
}

type index struct{ im *v1.IndexManifest }

func (i index) RawManifest() ([]byte, error) {
	i.im.MediaType = types.OCIImageIndex
	return json.Marshal(i.im)
}
func (i index) MediaType() (types.MediaType, error) { return types.OCIImageIndex, nil }

// readAll reads a legacy attestation layer, bounded.
func readAll(l v1.Layer) ([]byte, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxLayer+1))
	if err == nil && len(data) > maxLayer {
		err = fmt.Errorf("an attestation layer over %d bytes", maxLayer)
	}
	return data, err
}
