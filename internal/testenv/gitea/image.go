package gitea

import (
	"fmt"
	"runtime"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	ggrandom "github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

// Index is what PushRandomIndex pushed: the index's digest, and its
// children's manifest and config digests by architecture.
type Index struct {
	Digest   string
	Children map[string]string
	Configs  map[string]string
}

// PushRandomIndex pushes an OCI index of small random images to Gitea's
// registry as ref: one for linux/amd64, one for linux/arm64/v8, one for
// the host's architecture when it is neither (a node of the host's
// platform always finds its child), and an unknown/unknown entry, the
// platform buildx gives attestations.
func (s *Server) PushRandomIndex(ref string) (Index, error) {
	out := Index{Children: map[string]string{}, Configs: map[string]string{}}
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		platforms = append(platforms, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	}
	var adds []mutate.IndexAddendum
	for _, p := range append(platforms, v1.Platform{OS: "unknown", Architecture: "unknown"}) {
		img, err := platformImage(p)
		if err != nil {
			return out, err
		}
		d, err := img.Digest()
		if err != nil {
			return out, err
		}
		c, err := img.ConfigName()
		if err != nil {
			return out, err
		}
		out.Children[p.Architecture], out.Configs[p.Architecture] = d.String(), c.String()
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return out, fmt.Errorf("parsing %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithAuth(&authn.Basic{Username: s.AdminUser, Password: s.Token})); err != nil {
		return out, fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return out, fmt.Errorf("digest of %s: %w", ref, err)
	}
	out.Digest = d.String()
	return out, nil
}

// platformImage is a small random image whose config names platform p.
func platformImage(p v1.Platform) (v1.Image, error) {
	img, err := ggrandom.Image(512, 1)
	if err != nil {
		return nil, fmt.Errorf("making a random image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	return mutate.ConfigFile(img, cf)
}
