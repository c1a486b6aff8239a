package registry

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is go-containerregistry's in-memory registry served twice on
// loopback: raw, for pushing test content, and through a wrapper (auth,
// injected failures, tampering) for the Client under test.
type testRegistry struct {
	raw  string // host:port of the unwrapped server
	host string // host:port of the wrapped server
}

func newTestRegistry(t *testing.T, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	raw := httptest.NewServer(h)
	t.Cleanup(raw.Close)
	wrapped := raw
	if wrap != nil {
		wrapped = httptest.NewServer(wrap(h))
		t.Cleanup(wrapped.Close)
	}
	return &testRegistry{raw: hostOf(raw), host: hostOf(wrapped)}
}

func hostOf(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// isolateDockerConfig points the default keychain at an empty (or given)
// docker config, so tests never read the machine's credentials.
func isolateDockerConfig(t *testing.T, configJSON string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(dir, "none.json"))
	t.Setenv("XDG_RUNTIME_DIR", dir)
	if configJSON != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// newClient returns a Client for tests: no machine credentials, a short
// retry budget unless the test sets one.
func newClient(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := New(append([]Option{WithRetry(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %s", err)
	}
	return c
}

// imageSpec describes a random image to build.
type imageSpec struct {
	platform    v1.Platform
	labels      map[string]string
	annotations map[string]string
	created     time.Time
}

func buildImage(t *testing.T, s imageSpec) v1.Image {
	t.Helper()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.platform.OS, s.platform.Architecture, s.platform.Variant
	cf.Config.Labels = s.labels
	cf.Created = v1.Time{Time: s.created}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if s.annotations != nil {
		img = mutate.Annotations(img, s.annotations).(v1.Image)
	}
	return img
}

// attestationFor builds a buildx-style attestation manifest for child.
func attestationFor(t *testing.T, child v1.Hash) mutate.IndexAddendum {
	t.Helper()
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	return mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{
				"vnd.docker.reference.type":   "attestation-manifest",
				"vnd.docker.reference.digest": child.String(),
			},
		},
	}
}

// buildIndex builds an OCI index of one image per spec, plus an attestation
// manifest for the first image when attest is set.
func buildIndex(t *testing.T, annotations map[string]string, attest bool, specs ...imageSpec) (v1.ImageIndex, []v1.Image) {
	t.Helper()
	var adds []mutate.IndexAddendum
	var imgs []v1.Image
	for _, s := range specs {
		img := buildImage(t, s)
		p := s.platform
		imgs = append(imgs, img)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	if attest {
		adds = append(adds, attestationFor(t, digestOf(t, imgs[0])))
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	if annotations != nil {
		idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	}
	return idx, imgs
}

// push writes img or idx to ref on the raw server and returns its digest.
func (r *testRegistry) push(t *testing.T, ref string, obj digester) v1.Hash {
	t.Helper()
	tag, err := name.ParseReference(r.raw + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	switch o := obj.(type) {
	case v1.Image:
		err = remote.Write(tag, o)
	case v1.ImageIndex:
		err = remote.WriteIndex(tag, o)
	default:
		t.Fatalf("cannot push %T", obj)
	}
	if err != nil {
		t.Fatalf("pushing %s: %s", ref, err)
	}
	return digestOf(t, obj)
}

type digester interface{ Digest() (v1.Hash, error) }

func digestOf(t *testing.T, obj digester) v1.Hash {
	t.Helper()
	h, err := obj.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func configDigestOf(t *testing.T, img v1.Image) string {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// imageSize is manifest + config + layers of img, and the blobs it counts.
func imageSize(t *testing.T, img v1.Image, blobs map[string]int64) int64 {
	t.Helper()
	raw, err := img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	blobs[m.Config.Digest.String()] = m.Config.Size
	for _, l := range m.Layers {
		blobs[l.Digest.String()] = l.Size
	}
	return int64(len(raw))
}

func rawSize(t *testing.T, obj interface{ RawManifest() ([]byte, error) }) int64 {
	t.Helper()
	raw, err := obj.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(raw))
}

// counter counts requests by method and path kind, safely.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// isManifest reports whether r asks for a manifest.
func isManifest(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") }

// tamper serves manifests fetched with GET with one extra byte of
// whitespace: valid JSON, wrong digest. Headers, Docker-Content-Digest
// included, are the real ones.
func tamper(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !isManifest(r) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			body = append(bytes.Clone(body), '\n')
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

var (
	platformAMD64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	platformARM64 = v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
)
