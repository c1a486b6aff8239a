package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/internal/imageref"
)

// entry is an index entry for pick tests; its digest encodes its position.
func entry(i int, os, arch, variant string, annotations map[string]string) v1.Descriptor {
	return v1.Descriptor{
		MediaType:   types.OCIManifestSchema1,
		Digest:      v1.Hash{Algorithm: "sha256", Hex: strings.Repeat(string(rune('a'+i)), 64)},
		Platform:    &v1.Platform{OS: os, Architecture: arch, Variant: variant},
		Annotations: annotations,
	}
}

func TestPick(t *testing.T) {
	attestation := map[string]string{"vnd.docker.reference.type": "attestation-manifest"}
	buildx := []v1.Descriptor{
		entry(0, "unknown", "unknown", "", attestation), // an attestation listed first
		entry(1, "linux", "amd64", "", nil),
		entry(2, "linux", "arm64", "v8", nil),
		entry(3, "linux", "arm", "v7", nil),
		entry(4, "linux", "arm", "v6", nil),
		entry(5, "windows", "amd64", "", nil),
	}
	for _, tc := range []struct {
		name      string
		manifests []v1.Descriptor
		want      imageref.Platform
		wantIndex int // -1: no match
	}{
		{"amd64", buildx, imageref.Platform{OS: "linux", Architecture: "amd64"}, 1},
		{"amd64 alias x86_64", buildx, imageref.Platform{OS: "linux", Architecture: "x86_64"}, 1},
		{"amd64/v1 is amd64", buildx, imageref.Platform{OS: "linux", Architecture: "amd64", Variant: "v1"}, 1},
		{"arm64 without variant takes v8", buildx, imageref.Platform{OS: "linux", Architecture: "arm64"}, 2},
		{"arm64/v8", buildx, imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, 2},
		{"aarch64 alias", buildx, imageref.Platform{OS: "linux", Architecture: "aarch64"}, 2},
		{"arm64 v8 requested, entry without variant",
			[]v1.Descriptor{entry(0, "linux", "amd64", "", nil), entry(1, "linux", "arm64", "", nil)},
			imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, 1},
		{"arm64/v9 requested, only v8: no match", buildx, imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v9"}, -1},
		{"arm/v7", buildx, imageref.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, 3},
		{"arm without variant means v7", buildx, imageref.Platform{OS: "linux", Architecture: "arm"}, 3},
		{"arm/v6", buildx, imageref.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}, 4},
		{"arm/v8 falls back to the nearest lower variant", buildx, imageref.Platform{OS: "linux", Architecture: "arm", Variant: "v8"}, 3},
		{"arm/v5 has no lower variant", buildx, imageref.Platform{OS: "linux", Architecture: "arm", Variant: "v5"}, -1},
		{"windows", buildx, imageref.Platform{OS: "windows", Architecture: "amd64"}, 5},
		{"OS must match", buildx, imageref.Platform{OS: "darwin", Architecture: "amd64"}, -1},
		{"s390x absent", buildx, imageref.Platform{OS: "linux", Architecture: "s390x"}, -1},
		{"attestation is never picked", buildx, imageref.Platform{OS: "unknown", Architecture: "unknown"}, -1},
		{"unknown/unknown without annotation is an attestation too",
			[]v1.Descriptor{entry(0, "unknown", "unknown", "", nil)}, imageref.Platform{OS: "unknown", Architecture: "unknown"}, -1},
		{"no variant requested: any variant of the arch, in index order",
			[]v1.Descriptor{entry(0, "linux", "amd64", "", nil), entry(1, "linux", "arm64", "v9", nil), entry(2, "linux", "arm64", "v8.2", nil)},
			imageref.Platform{OS: "linux", Architecture: "arm64"}, 1},
		{"the first entry is not taken on faith",
			[]v1.Descriptor{entry(0, "linux", "amd64", "", nil)}, imageref.Platform{OS: "linux", Architecture: "arm64"}, -1},
		{"entries without a platform never match",
			[]v1.Descriptor{{MediaType: types.OCIManifestSchema1, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}}},
			imageref.Platform{OS: "linux", Architecture: "amd64"}, -1},
		{"case does not matter", buildx, imageref.Platform{OS: "Linux", Architecture: "AMD64"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pick(tc.manifests, tc.want)
			gotIndex := -1
			if ok {
				for i, m := range tc.manifests {
					if m.Digest == got.Digest {
						gotIndex = i
					}
				}
			}
			if gotIndex != tc.wantIndex {
				t.Errorf("pick(%s) took entry %d, want %d", tc.want, gotIndex, tc.wantIndex)
			}
		})
	}
}

func TestChildForAndCandidates(t *testing.T) {
	isolateDockerConfig(t, "")
	reg := newTestRegistry(t, nil)
	specs := []imageSpec{
		{platform: v1.Platform{OS: "linux", Architecture: "amd64"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}},
	}
	idx, imgs := buildIndex(t, nil, true, specs...)
	idxDigest := reg.push(t, "multi:latest", idx)
	single := buildImage(t, imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
	reg.push(t, "single:latest", single)
	amd64 := Child{Platform: imageref.Platform{OS: "linux", Architecture: "amd64"}, Digest: digestOf(t, imgs[0]).String(), MediaType: string(types.OCIManifestSchema1), Size: rawSize(t, imgs[0])}
	arm64 := Child{Platform: imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, Digest: digestOf(t, imgs[1]).String(), MediaType: string(types.OCIManifestSchema1), Size: rawSize(t, imgs[1])}

	c := newClient(t)
	for _, tc := range []struct {
		name       string
		ref        string
		platform   imageref.Platform
		want       Child
		wantConfig string
		wantErr    error // for ChildFor
	}{
		{"index tag, amd64", reg.host + "/multi:latest", imageref.Platform{OS: "linux", Architecture: "amd64"}, amd64, configDigestOf(t, imgs[0]), nil},
		{"index digest, arm64 without variant", reg.host + "/multi@" + idxDigest.String(), imageref.Platform{OS: "linux", Architecture: "arm64"}, arm64, configDigestOf(t, imgs[1]), nil},
		{"empty OS means linux", reg.host + "/multi:latest", imageref.Platform{OS: "", Architecture: "arm64", Variant: "v8"}, arm64, configDigestOf(t, imgs[1]), nil},
		{"missing platform", reg.host + "/multi:latest", imageref.Platform{OS: "linux", Architecture: "s390x"}, Child{}, "", ErrNoPlatform},
		{"single manifest", reg.host + "/single:latest", imageref.Platform{OS: "linux", Architecture: "amd64"}, Child{}, configDigestOf(t, single), ErrNotIndex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.ChildFor(t.Context(), tc.ref, tc.platform)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ChildFor error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ChildFor (-want +got):\n%s", diff)
			}
			if err != nil && !strings.Contains(err.Error(), tc.ref) {
				t.Errorf("error %q does not name the reference", err)
			}
			cands, err := c.Candidates(t.Context(), tc.ref, tc.platform, true)
			if err != nil {
				t.Fatalf("Candidates: %s", err)
			}
			if tc.wantConfig == "" {
				if len(cands.Configs) != 0 || len(cands.Children) != 0 || !cands.Index {
					t.Errorf("Candidates = %+v, want an index with no candidate", cands)
				}
				return
			}
			if cands.Index != (tc.wantErr == nil) || len(cands.Configs) != 1 {
				t.Fatalf("Candidates = %+v, want one config (index %t)", cands, tc.wantErr == nil)
			}
			if config := cands.Configs[0]; config != tc.wantConfig {
				t.Errorf("config = %s, want %s", config, tc.wantConfig)
			}
		})
	}
}

// Candidates never chooses among children that fit a platform: a Node
// reports no variant, so every amd64 variant is a candidate, with its
// config, in index order; attestation manifests never are.
func TestCandidatesListsEveryFit(t *testing.T) {
	isolateDockerConfig(t, "")
	reg := newTestRegistry(t, nil)
	idx, imgs := buildIndex(t, nil, true,
		imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64"}},
		imageSpec{platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}},
		imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}},
	)
	reg.push(t, "variants:latest", idx)
	c := newClient(t)
	got, err := c.Candidates(t.Context(), reg.host+"/variants:latest", imageref.Platform{OS: "linux", Architecture: "amd64"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, ch := range got.Children {
		digests = append(digests, ch.Digest)
	}
	if diff := cmp.Diff([]string{digestOf(t, imgs[0]).String(), digestOf(t, imgs[2]).String()}, digests); diff != "" || !got.Index {
		t.Errorf("amd64 candidates (-want +got):\n%s (index %t)", diff, got.Index)
	}
	if diff := cmp.Diff([]string{configDigestOf(t, imgs[0]), configDigestOf(t, imgs[2])}, got.Configs); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
	v3, err := c.Candidates(t.Context(), reg.host+"/variants:latest", imageref.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}, false)
	if err != nil || len(v3.Children) != 1 || v3.Children[0].Digest != digestOf(t, imgs[2]).String() || v3.Configs != nil {
		t.Errorf("amd64/v3 candidates = %+v, %v; want the v3 child alone, no configs", v3, err)
	}
	if _, err := c.Candidates(t.Context(), reg.host+"/variants@sha256:"+strings.Repeat("0", 64), imageref.Platform{OS: "linux", Architecture: "amd64"}, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("a digest the registry lacks: %v, want ErrNotFound", err)
	}
}
