package kubeletsim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
)

// image is what the node knows about an image it has pulled.
type image struct {
	repo     string // repository as the runtime names it, e.g. 127.0.0.1:5000/org/app
	digest   string // digest of what the reference named (an index's own digest)
	platform string // digest of the node platform's manifest
	config   string // config digest of the node platform's image
}

// imageID renders the image in form f.
func (im *image) imageID(f ImageIDForm) string {
	switch f {
	case PlatformDigest:
		return im.repo + "@" + im.platform
	case ConfigDigest:
		return im.config
	case DockerPullable:
		return "docker-pullable://" + im.repo + "@" + im.digest
	default:
		return im.repo + "@" + im.digest
	}
}

// imageStore is the node's local image store: what it has pulled, by
// reference as written in the Pod spec, and by repo@digest.
type imageStore struct {
	mu     sync.Mutex
	images map[string]*image
}

func newImageStore() *imageStore { return &imageStore{images: map[string]*image{}} }

func (st *imageStore) get(ref string) (*image, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	im, ok := st.images[ref]
	return im, ok
}

func (st *imageStore) put(ref string, im *image) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.images[ref] = im
}

// errNeverPull is the ErrImageNeverPull condition.
var errNeverPull = errors.New("image is not present with pull policy of Never")

// staleImageFor returns the old image the node kept for img's repository,
// or nil when StaleImage is not set for it.
func (s *Sim) staleImageFor(ctx context.Context, img string) (*image, error) {
	ref, err := s.parse(img)
	if err != nil {
		return nil, fmt.Errorf("parsing image %q: %w", img, err)
	}
	d, ok := s.staleDigest(ref.Context().Name())
	if !ok {
		return nil, nil
	}
	return s.staleImage(ctx, ref.Context(), d), nil
}

// imageFor returns the image a container runs, pulling it unless the node
// already has it and the pull policy lets it use that.
func (s *Sim) imageFor(ctx context.Context, c *corev1.Container) (*image, error) {
	ref, err := s.parse(c.Image)
	if err != nil {
		return nil, fmt.Errorf("parsing image %q: %w", c.Image, err)
	}
	_, byDigest := ref.(name.Digest)
	if im, ok := s.images.get(c.Image); ok && (byDigest || c.ImagePullPolicy != corev1.PullAlways) {
		return im, nil
	}
	if c.ImagePullPolicy == corev1.PullNever {
		return nil, errNeverPull
	}
	im, err := s.pull(ctx, ref)
	if err != nil {
		return nil, err
	}
	s.images.put(c.Image, im)
	s.images.put(im.repo+"@"+im.digest, im)
	return im, nil
}

// staleImage describes the old image the node kept: resolved through the
// registry when it still has it, else known by its digest alone.
func (s *Sim) staleImage(ctx context.Context, repo name.Repository, digest string) *image {
	key := runtimeRepo(repo) + "@" + digest
	if im, ok := s.images.get(key); ok {
		return im
	}
	im, err := s.pull(ctx, repo.Digest(digest))
	if err != nil {
		// Not in the registry any more: the node knows only the digest.
		return &image{repo: runtimeRepo(repo), digest: digest, platform: digest, config: digest}
	}
	s.images.put(key, im)
	return im
}

// pull resolves ref against the registry the way a container runtime
// pulls it: the manifest or index it names, then for an index the child
// for the node's platform (never simply the first), then that image's
// config digest.
func (s *Sim) pull(ctx context.Context, ref name.Reference) (*image, error) {
	s.failPullMu.RLock()
	for _, f := range s.failPull {
		if strings.Contains(ref.String(), f) {
			s.failPullMu.RUnlock()
			return nil, fmt.Errorf("rpc error: code = NotFound desc = %s: not found", ref.String())
		}
	}
	s.failPullMu.RUnlock()
	ctx, cancel := context.WithTimeout(ctx, s.pullTimeout)
	defer cancel()
	opts := s.remoteOptions(ctx)
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, err
	}
	im := &image{repo: runtimeRepo(ref.Context()), digest: desc.Digest.String()}
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", ref.String(), err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", ref.String(), err)
		}
		child, ok := pickPlatform(m.Manifests, s.platform)
		if !ok {
			return nil, fmt.Errorf("no match for platform %s in manifest %s: not found", s.platform.String(), desc.Digest.String())
		}
		img, err := remote.Image(ref.Context().Digest(child.Digest.String()), opts...)
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigName()
		if err != nil {
			return nil, fmt.Errorf("reading config of %s@%s: %w", ref.Context().Name(), child.Digest.String(), err)
		}
		im.platform, im.config = child.Digest.String(), cfg.String()
	case desc.MediaType.IsImage():
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("reading manifest %s: %w", ref.String(), err)
		}
		cfg, err := img.ConfigName()
		if err != nil {
			return nil, fmt.Errorf("reading config of %s: %w", ref.String(), err)
		}
		im.platform, im.config = im.digest, cfg.String()
	default:
		return nil, fmt.Errorf("pulling %s: unsupported media type %s", ref.String(), desc.MediaType)
	}
	return im, nil
}

func (s *Sim) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(s.keychain)}
	if s.transport != nil {
		opts = append(opts, remote.WithTransport(s.transport))
	}
	return append(opts, s.remoteOpts...)
}

// parse parses an image reference, allowing plain HTTP for the registries
// WithInsecureRegistries named.
func (s *Sim) parse(img string) (name.Reference, error) {
	ref, err := name.ParseReference(img)
	if err != nil {
		return nil, err
	}
	if s.insecure[ref.Context().RegistryStr()] {
		return name.ParseReference(img, name.Insecure)
	}
	return ref, nil
}

// normaliseRepo is the key StaleImage stores under.
func (s *Sim) normaliseRepo(repo string) (string, error) {
	r, err := name.NewRepository(repo)
	if err != nil {
		return "", fmt.Errorf("parsing repository %q: %w", repo, err)
	}
	return r.Name(), nil
}

// runtimeRepo names a repository as containerd does: Docker Hub is
// docker.io, not index.docker.io.
func runtimeRepo(r name.Repository) string {
	n := r.Name()
	if rest, ok := strings.CutPrefix(n, name.DefaultRegistry+"/"); ok {
		return "docker.io/" + rest
	}
	return n
}

// pickPlatform returns the index child for p: OS and architecture must
// match; a variant must match when both sides name one, and an exact
// variant match wins. Attestation manifests (unknown/unknown) never match.
func pickPlatform(children []v1.Descriptor, p v1.Platform) (v1.Descriptor, bool) {
	var best v1.Descriptor
	found := false
	for _, c := range children {
		if c.Platform == nil || c.Platform.OS != p.OS || c.Platform.Architecture != p.Architecture {
			continue
		}
		cv, pv := normVariant(c.Platform), normVariant(&p)
		if cv == pv {
			return c, true
		}
		if (cv == "" || pv == "") && !found {
			best, found = c, true
		}
	}
	return best, found
}

// normVariant treats arm64 with no variant as arm64/v8, as containerd does.
func normVariant(p *v1.Platform) string {
	if p.Architecture == "arm64" && p.Variant == "" {
		return "v8"
	}
	return p.Variant
}
