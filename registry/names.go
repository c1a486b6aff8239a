package registry

import (
	"fmt"
	"regexp"

	"github.com/google/go-containerregistry/pkg/name"
)

// Normalize returns the repository of an image reference in
// go-containerregistry's normal form, the form pins compare: "nginx" is
// "index.docker.io/library/nginx", and a registry host keeps its port
// ("127.0.0.1:3000/org/app"). A tag or digest in the input is dropped.
func Normalize(repo string) (string, error) {
	r, err := name.ParseReference(repo)
	if err != nil {
		return "", fmt.Errorf("normalising %q: %w", repo, err)
	}
	return r.Context().Name(), nil
}

var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParseDigest checks that s is "sha256:" followed by 64 lower-case hex
// digits, and returns it.
func ParseDigest(s string) (string, error) {
	if !sha256Digest.MatchString(s) {
		return "", fmt.Errorf("digest %q: want sha256: and 64 lower-case hex digits", s)
	}
	return s, nil
}
