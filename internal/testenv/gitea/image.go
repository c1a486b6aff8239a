package gitea

import (
	"fmt"
	"runtime"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/testenv/images"
)

// PushRandomImage pushes a small random image to Gitea's registry as
// ref (REGISTRY/OWNER/NAME:TAG, as the admin) and returns its digest.
func (s *Server) PushRandomImage(ref string) (string, error) {
	img, err := images.Random()
	if err != nil {
		return "", fmt.Errorf("making a random image: %w", err)
	}
	p, err := images.Push(ref, img, s.registry()...)
	return p.Digest, err
}

// registry logs in to the registry as the admin, through the server's
// own client (which trusts Gitea's certificate in TLS mode).
func (s *Server) registry() []remote.Option {
	return []remote.Option{remote.WithAuth(&authn.Basic{Username: s.AdminUser, Password: s.Token}), remote.WithTransport(s.client.Transport)}
}

// PushImageAs tags the image at from (a tag or digest reference) as to,
// as `crane tag` does, and returns its digest.
func (s *Server) PushImageAs(from, to string) (string, error) {
	auth := s.registry()
	src, err := name.ParseReference(from, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", from, err)
	}
	dst, err := name.ParseReference(to, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", to, err)
	}
	desc, err := remote.Get(src, auth...)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", from, err)
	}
	img, err := desc.Image()
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", from, err)
	}
	if err := remote.Write(dst, img, auth...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", to, err)
	}
	return desc.Digest.String(), nil
}

// PushRandomIndex pushes an OCI index of small random images to Gitea's
// registry as ref (images.PushIndex): one for linux/amd64, one for
// linux/arm64/v8, and one for the host's architecture when it is neither
// (a node of the host's platform always finds its child).
func (s *Server) PushRandomIndex(ref string) (images.Index, error) {
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		platforms = append(platforms, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	}
	return images.RandomIndex(ref, platforms, s.registry()...)
}
