package gitea

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggrandom "github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushRandomImage pushes a small random image to Gitea's registry as
// ref (REGISTRY/OWNER/NAME:TAG, as the admin) and returns its digest.
func (s *Server) PushRandomImage(ref string) (string, error) {
	img, err := ggrandom.Image(256, 1)
	if err != nil {
		return "", fmt.Errorf("making a random image: %w", err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: s.AdminUser, Password: s.Token})); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("digest of %s: %w", ref, err)
	}
	return d.String(), nil
}

// PushImageAs tags the image at from (a tag or digest reference) as to,
// as `crane tag` does, and returns its digest.
func (s *Server) PushImageAs(from, to string) (string, error) {
	auth := remote.WithAuth(&authn.Basic{Username: s.AdminUser, Password: s.Token})
	src, err := name.ParseReference(from, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", from, err)
	}
	dst, err := name.ParseReference(to, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", to, err)
	}
	desc, err := remote.Get(src, auth)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", from, err)
	}
	img, err := desc.Image()
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", from, err)
	}
	if err := remote.Write(dst, img, auth); err != nil {
		return "", fmt.Errorf("pushing %s: %w", to, err)
	}
	return desc.Digest.String(), nil
}
