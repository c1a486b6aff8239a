package imagebuild

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fixture writes fake binaries and a CA bundle and returns the options
// that index them.
func fixture(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return Options{
		Binaries: []Binary{
			{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Path: write("amd64", "amd64 binary")},
			{Platform: v1.Platform{OS: "linux", Architecture: "arm64"}, Path: write("arm64", "arm64 binary")},
		},
		CABundle: write("ca.crt", "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"),
		Labels:   Labels("0123abc", "https://gitea.example/platform/pinbot", "v1.2.3"),
		Created:  time.Unix(1796128395, 0),
	}
}

func mustIndex(t *testing.T, o Options) v1.ImageIndex {
	t.Helper()
	idx, err := Index(o)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestIndex(t *testing.T) {
	o := fixture(t)
	idx := mustIndex(t, o)
	if mt, err := idx.MediaType(); err != nil || mt != types.OCIImageIndex {
		t.Errorf("index media type %s (%v), want %s", mt, err, types.OCIImageIndex)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	var bases []v1.Hash
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s, want %s", d.Platform, d.MediaType, types.OCIManifestSchema1)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
			t.Fatalf("%s: config %s and %d layers, want %s and 2", d.Platform, m.Config.MediaType, len(m.Layers), types.OCIConfigJSON)
		}
		for _, l := range m.Layers {
			if l.MediaType != types.OCILayer {
				t.Errorf("%s: layer media type %s, want %s", d.Platform, l.MediaType, types.OCILayer)
			}
		}
		bases = append(bases, m.Layers[0].Digest)
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got := struct {
			OS, Arch   string
			Created    time.Time
			Entrypoint []string
			User       string
			Labels     map[string]string
		}{cfg.OS, cfg.Architecture, cfg.Created.UTC(), cfg.Config.Entrypoint, cfg.Config.User, cfg.Config.Labels}
		want := got
		want.OS, want.Arch = d.Platform.OS, d.Platform.Architecture
		want.Created = time.Unix(1796128395, 0).UTC()
		want.Entrypoint = []string{"/usr/local/bin/pinbot"}
		want.User = "65532:65532"
		want.Labels = map[string]string{
			"org.opencontainers.image.revision": "0123abc",
			"org.opencontainers.image.source":   "https://gitea.example/platform/pinbot",
			"org.opencontainers.image.version":  "v1.2.3",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: config (-want +got):\n%s", d.Platform, diff)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		for _, l := range layers {
			for _, h := range readLayer(t, l) {
				files[h.Name] = h.Content
			}
		}
		if got, want := files["usr/local/bin/pinbot"], d.Platform.Architecture+" binary"; got != want {
			t.Errorf("%s: /usr/local/bin/pinbot holds %q, want %q", d.Platform, got, want)
		}
		if !strings.Contains(files["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(files["etc/group"], "nonroot:x:65532:") {
			t.Errorf("%s: no user 65532 in /etc/passwd and /etc/group:\n%s\n%s", d.Platform, files["etc/passwd"], files["etc/group"])
		}
		if !strings.Contains(files["etc/ssl/certs/ca-certificates.crt"], "fake") {
			t.Errorf("%s: CA bundle not copied: %q", d.Platform, files["etc/ssl/certs/ca-certificates.crt"])
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	if len(bases) == 2 && bases[0] != bases[1] {
		t.Errorf("the platforms' base layers differ: %s and %s", bases[0], bases[1])
	}
}

func TestIndexIsReproducible(t *testing.T) {
	o := fixture(t)
	first := digest(t, mustIndex(t, o))
	if got := digest(t, mustIndex(t, o)); got != first {
		t.Errorf("second build: digest %s, want %s", got, first)
	}
	later := o
	later.Created = o.Created.Add(time.Second)
	relabeled := o
	relabeled.Labels = Labels("0123abd", "https://gitea.example/platform/pinbot", "v1.2.3")
	for name, o := range map[string]Options{"later SOURCE_DATE_EPOCH": later, "another revision": relabeled} {
		if got := digest(t, mustIndex(t, o)); got == first {
			t.Errorf("%s: same digest %s", name, got)
		}
	}
}

func TestIndexErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-ca.crt")
	o := fixture(t)
	o.CABundle = missing
	if _, err := Index(o); err == nil || !strings.Contains(err.Error(), "reading the CA bundle "+missing) {
		t.Errorf("missing CA bundle: error %v, want one naming %s", err, missing)
	}
	o = fixture(t)
	o.Binaries = append(o.Binaries, o.Binaries[0])
	if _, err := Index(o); err == nil || !strings.Contains(err.Error(), "platform linux/amd64 listed twice") {
		t.Errorf("platform twice: error %v", err)
	}
	if _, err := Index(Options{}); err == nil || !strings.Contains(err.Error(), "no binaries") {
		t.Errorf("no binaries: error %v", err)
	}
}

func TestPushToInMemoryRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(u.Host + "/platform/pinbot:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	idx := mustIndex(t, fixture(t))
	got, err := Push(context.Background(), ref, idx)
	if err != nil {
		t.Fatal(err)
	}
	want := u.Host + "/platform/pinbot@" + digest(t, idx).String()
	if got.String() != want {
		t.Errorf("Push returned %s, want %s", got, want)
	}
	pulled, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d := digest(t, pulled); d.String() != got.DigestStr() {
		t.Errorf("the tag points at %s, want %s", d, got.DigestStr())
	}
	im, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		img, err := remote.Image(ref.Context().Digest(d.Digest.String()))
		if err != nil {
			t.Fatalf("%s: %s", d.Platform, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != d.Platform.Architecture || cfg.Config.User != User {
			t.Errorf("%s: pulled config has architecture %s and user %q", d.Platform, cfg.Architecture, cfg.Config.User)
		}
	}
}
