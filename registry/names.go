package registry

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"pinbot.dev/pinbot/internal/clip"
)

// Normalize returns the repository of an image reference in
// go-containerregistry's normal form, the form pins compare: "nginx" is
// "index.docker.io/library/nginx", and a registry host keeps its port
// ("127.0.0.1:3000/org/app"). A tag or digest in the input is dropped.
func Normalize(repo string) (string, error) {
	r, err := name.ParseReference(repo)
	if err != nil {
		return "", fmt.Errorf("normalising %s: %w", clip.QuoteRef(repo), clip.Error(err))
	}
	return r.Context().Name(), nil
}
