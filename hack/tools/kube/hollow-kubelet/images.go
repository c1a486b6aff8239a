package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Image reference forms, as the flag spells them.
const (
	formRepoDigest     = "repo-digest"
	formPlatformDigest = "platform-digest"
	formConfigDigest   = "config-digest"
)

// imageService is the node's image store. It implements the kubelet's
// internalapi.ImageManagerService.
type imageService struct {
	form     string
	platform v1.Platform       // the kubelet's: it reports the host's as the Node's
	mirrors  map[string]string // registry host -> mirror host
	insecure map[string]bool

	mu     sync.Mutex
	images map[string]*runtimeapi.Image // by reference as the Pod wrote it, and by Id
}

func newImageService(form string, mirrors, insecure []string) (*imageService, error) {
	switch form {
	case formRepoDigest, formPlatformDigest, formConfigDigest:
	default:
		return nil, fmt.Errorf("--image-id-form %q: want %s, %s or %s", form, formRepoDigest, formPlatformDigest, formConfigDigest)
	}
	s := &imageService{form: form, platform: v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}, mirrors: map[string]string{}, insecure: map[string]bool{}, images: map[string]*runtimeapi.Image{}}
	for _, m := range mirrors {
		from, to, ok := strings.Cut(m, "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("--mirror %q: want host=mirror-host", m)
		}
		s.mirrors[from] = to
	}
	for _, h := range insecure {
		s.insecure[h] = true
	}
	return s, nil
}

func (s *imageService) lookup(ref string) *runtimeapi.Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.images[ref]
}

// ImageStatus answers from the store: nil when the node has not pulled the
// reference, which makes the kubelet pull it.
func (s *imageService) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{Image: s.lookup(spec.GetImage())}, nil
}

// PullImage resolves the reference against the registry (or its mirror)
// with the credentials the kubelet passes and stores what it found.
func (s *imageService) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	ref := spec.GetImage()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	from := parsed
	if mirror, ok := s.mirrors[parsed.Context().RegistryStr()]; ok {
		if from, err = s.rehost(parsed, mirror); err != nil {
			return "", fmt.Errorf("pull %s from mirror %s: %w", ref, mirror, err)
		}
	} else if s.insecure[parsed.Context().RegistryStr()] {
		if from, err = s.rehost(parsed, parsed.Context().RegistryStr()); err != nil {
			return "", err
		}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithPlatform(s.platform), remote.WithAuth(authenticator(auth))}
	desc, err := remote.Get(from, opts...)
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	img, err := desc.Image() // an index resolves to the platform's child
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	child, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	config, err := img.ConfigName()
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	size, _ := img.Size()

	// The repository keeps the name the Pod used, not the mirror's.
	repo := parsed.Context().Name()
	id := repo + "@" + desc.Digest.String()
	switch s.form {
	case formPlatformDigest:
		id = repo + "@" + child.String()
	case formConfigDigest:
		id = config.String()
	}
	stored := &runtimeapi.Image{
		Id:          id,
		RepoDigests: []string{repo + "@" + desc.Digest.String()},
		Size:        uint64(size),
		Spec:        &runtimeapi.ImageSpec{Image: ref},
	}
	if _, isTag := parsed.(name.Tag); isTag {
		stored.RepoTags = []string{ref}
	}
	s.mu.Lock()
	s.images[ref] = stored
	s.images[id] = stored
	s.mu.Unlock()
	klog.InfoS("Pulled image", "image", ref, "from", from.Context().RegistryStr(), "imageID", id)
	return id, nil
}

// rehost names ref's repository on another registry host.
func (s *imageService) rehost(ref name.Reference, host string) (name.Reference, error) {
	var opts []name.Option
	if s.insecure[host] {
		opts = append(opts, name.Insecure)
	}
	repo := host + "/" + ref.Context().RepositoryStr()
	if d, ok := ref.(name.Digest); ok {
		return name.NewDigest(repo+"@"+d.DigestStr(), opts...)
	}
	return name.NewTag(repo+":"+ref.Identifier(), opts...)
}

func authenticator(a *runtimeapi.AuthConfig) authn.Authenticator {
	if a == nil {
		return authn.Anonymous
	}
	return authn.FromConfig(authn.AuthConfig{
		Username:      a.GetUsername(),
		Password:      a.GetPassword(),
		Auth:          a.GetAuth(),
		IdentityToken: a.GetIdentityToken(),
		RegistryToken: a.GetRegistryToken(),
	})
}

// ListImages lists what the node has pulled, once each.
func (s *imageService) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*runtimeapi.Image]bool{}
	var out []*runtimeapi.Image
	for _, im := range s.images {
		if !seen[im] {
			seen[im] = true
			out = append(out, im)
		}
	}
	return out, nil
}

// RemoveImage forgets an image under every reference it was stored by.
func (s *imageService) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	im := s.images[spec.GetImage()]
	for k, v := range s.images {
		if v == im {
			delete(s.images, k)
		}
	}
	return nil
}

// ImageFsInfo reports an empty image filesystem; the kubelet's image GC
// never needs to run.
func (s *imageService) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

// Close has no connection to close.
func (s *imageService) Close(context.Context) error { return nil }
