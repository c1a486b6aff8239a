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
