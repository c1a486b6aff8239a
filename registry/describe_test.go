package registry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/internal/imageref"
)

func TestDescribe(t *testing.T) {
	isolateDockerConfig(t, "")
	reg := newTestRegistry(t, nil)
	created := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

	// A single-platform image with labels and annotations.
	single := buildImage(t, imageSpec{
		platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"},
		created:  created,
		labels: map[string]string{
			"org.opencontainers.image.revision": "label-rev",
			"org.opencontainers.image.source":   "https://git.example/app",
			"team":                              "pay",
		},
		annotations: map[string]string{
			"org.opencontainers.image.revision": "annotated-rev", // wins over the label
			"org.opencontainers.image.version":  "1.4.2",
		},
	})
	singleDigest := reg.push(t, "team/app:1.4.2", single).String()
	singleBlobs := map[string]int64{}
	singleSize := imageSize(t, single, singleBlobs)
	for _, s := range singleBlobs {
		singleSize += s
	}

	// A multi-arch index with an attestation manifest; the children share
	// one label and differ in another.
	specs := []imageSpec{
		{platform: v1.Platform{OS: "linux", Architecture: "amd64"}, created: created,
			labels: map[string]string{"org.opencontainers.image.source": "https://git.example/multi", "arch": "amd64"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, created: created.Add(time.Hour),
			labels: map[string]string{"org.opencontainers.image.source": "https://git.example/multi", "arch": "arm64"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, created: created,
			labels: map[string]string{"org.opencontainers.image.source": "https://git.example/multi", "arch": "arm"}},
	}
	idx, children := buildIndex(t, map[string]string{"org.opencontainers.image.version": "2.0.0"}, true, specs...)
	idxDigest := reg.push(t, "team/multi:2", idx).String()
	idxBlobs := map[string]int64{}
	idxSize := rawSize(t, idx)
	var wantChildren []Child
	for i, img := range children {
		idxSize += imageSize(t, img, idxBlobs)
		p := specs[i].platform
		wantChildren = append(wantChildren, Child{
			Platform:  imageref.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant},
			Digest:    digestOf(t, img).String(),
			MediaType: string(types.OCIManifestSchema1),
			Size:      rawSize(t, img),
		})
	}
	for _, s := range idxBlobs {
		idxSize += s
	}

	// An index whose image entry names no platform (the config tells) and
	// which nests another index (counted, not read).
	bare := buildImage(t, imageSpec{platform: v1.Platform{OS: "linux", Architecture: "s390x"}, labels: map[string]string{"a": "b"}})
	nested, _ := buildIndex(t, nil, false, imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
	outer := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: bare}, mutate.IndexAddendum{Add: nested})
	outerDigest := reg.push(t, "team/outer:1", outer).String()
	outerBlobs := map[string]int64{}
	outerSize := rawSize(t, outer) + imageSize(t, bare, outerBlobs) + rawSize(t, nested)
	for _, s := range outerBlobs {
		outerSize += s
	}

	for _, tc := range []struct {
		name string
		ref  string
		want Image
	}{{
		name: "single image by tag",
		ref:  reg.host + "/team/app:1.4.2",
		want: Image{
			Reference:  reg.host + "/team/app:1.4.2",
			Repository: reg.host + "/team/app",
			Tag:        "1.4.2",
			Digest:     singleDigest,
			MediaType:  string(types.OCIManifestSchema1),
			Children:   []Child{},
			Platform:   &imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"},
			Created:    created,
			Labels: map[string]string{
				"org.opencontainers.image.revision": "label-rev",
				"org.opencontainers.image.source":   "https://git.example/app",
				"team":                              "pay",
			},
			Annotations: map[string]string{
				"org.opencontainers.image.revision": "annotated-rev",
				"org.opencontainers.image.version":  "1.4.2",
			},
			Revision: "annotated-rev",
			Source:   "https://git.example/app",
			Version:  "1.4.2",
			Size:     singleSize,
		},
	}, {
		name: "index by digest: attestation left out",
		ref:  reg.host + "/team/multi@" + idxDigest,
		want: Image{
			Reference:   reg.host + "/team/multi@" + idxDigest,
			Repository:  reg.host + "/team/multi",
			Digest:      idxDigest,
			MediaType:   string(types.OCIImageIndex),
			Index:       true,
			Children:    wantChildren,
			Created:     created.Add(time.Hour), // the newest child
			Labels:      map[string]string{"org.opencontainers.image.source": "https://git.example/multi"},
			Annotations: map[string]string{"org.opencontainers.image.version": "2.0.0"},
			Source:      "https://git.example/multi",
			Version:     "2.0.0",
			Size:        idxSize,
		},
	}, {
		name: "index entries without platforms, nested index",
		ref:  reg.host + "/team/outer:1",
		want: Image{
			Reference:  reg.host + "/team/outer:1",
			Repository: reg.host + "/team/outer",
			Tag:        "1",
			Digest:     outerDigest,
			MediaType:  string(types.OCIImageIndex),
			Index:      true,
			Children: []Child{
				{Platform: imageref.Platform{OS: "linux", Architecture: "s390x"}, Digest: digestOf(t, bare).String(), MediaType: string(types.OCIManifestSchema1), Size: rawSize(t, bare)},
				{Digest: digestOf(t, nested).String(), MediaType: string(types.OCIImageIndex), Size: rawSize(t, nested)},
			},
			Labels:      map[string]string{"a": "b"},
			Annotations: map[string]string{},
			Size:        outerSize,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newClient(t).Describe(t.Context(), tc.ref)
			if err != nil {
				t.Fatalf("Describe(%q): %s", tc.ref, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Describe(%q) (-want +got):\n%s", tc.ref, diff)
			}
		})
	}
}

// TestImageJSON pins the JSON keys scripts read from `pinbot resolve -o json`.
func TestImageJSON(t *testing.T) {
	img := Image{
		Reference: "r", Repository: "repo", Tag: "t", Digest: "d", MediaType: "m", Index: true,
		Children: []Child{
			{Platform: imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, Digest: "c", MediaType: "cm", Size: 3},
			{Digest: "n", MediaType: "nested"},
		},
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Labels:  map[string]string{}, Annotations: map[string]string{"a": "b"},
		Revision: "rev", Source: "src", Version: "v", Size: 42,
	}
	b, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"reference": "r", "repository": "repo", "tag": "t", "digest": "d", "mediaType": "m", "index": true,
		"children": []any{
			map[string]any{"platform": "linux/arm64/v8", "digest": "c", "mediaType": "cm", "size": 3.0},
			map[string]any{"platform": "", "digest": "n", "mediaType": "nested", "size": 0.0},
		},
		"platform": nil, "created": "2026-01-02T03:04:05Z",
		"labels": map[string]any{}, "annotations": map[string]any{"a": "b"},
		"revision": "rev", "source": "src", "version": "v", "size": 42.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	var back Image
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(img, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}
