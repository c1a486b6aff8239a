package images

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestPushAndIndex(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	img, err := Random(OnPlatform(v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}),
		func(cf *v1.ConfigFile) { cf.Created = v1.Time{Time: created} })
	if err != nil {
		t.Fatal(err)
	}
	p, err := Push(host+"/app:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref(t, host+"/app:v1"))
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := got.ConfigFile()
	d, _ := got.Digest()
	c, _ := got.ConfigName()
	if d.String() != p.Digest || c.String() != p.Config || cf.Architecture != "arm64" || cf.Variant != "v8" || !cf.Created.Time.Equal(created) {
		t.Errorf("pushed %+v; the registry holds %s (config %s), %s/%s/%s created %s", p, d, c, cf.OS, cf.Architecture, cf.Variant, cf.Created)
	}
	again, _ := Random()
	if d2, _ := again.Digest(); d2 == d {
		t.Error("two random images share a digest")
	}

	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	idx, err := RandomIndex(host+"/app:multi", platforms)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := remote.Index(ref(t, host+"/app@"+idx.Digest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ri.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 3 || !m.Manifests[0].Platform.Equals(AttestationPlatform) || m.Manifests[0].Annotations["vnd.docker.reference.type"] != "attestation-manifest" {
		t.Fatalf("index %+v: want the attestation first, then two platforms", m.Manifests)
	}
	for i, want := range platforms {
		e := m.Manifests[i+1]
		if e.Platform.Architecture != want.Architecture || e.Platform.Variant != want.Variant || e.Digest.String() != idx.Children[want.Architecture] {
			t.Errorf("entry %d: %v %s; want %v %s", i+1, e.Platform, e.Digest, want, idx.Children[want.Architecture])
		}
	}
	if idx.Configs["amd64"] == "" || idx.Children["unknown"] != m.Manifests[0].Digest.String() {
		t.Errorf("index %+v: want the configs and the attestation's digest", idx)
	}
}

func ref(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
