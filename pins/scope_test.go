package pins

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	py := "index.docker.io/library/python"
	pin := func(file string, line int, tag, digest string) Pin {
		return Pin{File: file, Line: line, Kind: KindManifest, Image: py, Tag: tag, Digest: digest}
	}
	slim := pin("a.yaml", 1, "3.14.6-slim", digestA)
	alpine := pin("a.yaml", 2, "3.14.6-alpine", digestA)
	bare := pin("b/Dockerfile", 1, "", digestA)
	latest := pin("c.yaml", 3, "latest", digestA)
	tagRefSame := pin("d.yaml", 4, "3.14.7-slim", "")
	tagRefOther := pin("d.yaml", 5, "3.14.6-slim", "")
	ignored := pin("e.yaml", 1, "3.14.6-alpine", digestA)
	ignored.Ignored = true
	other := Pin{File: "f.yaml", Line: 1, Image: "index.docker.io/library/redis", Tag: "7-alpine", Digest: digestA}
	all := []Pin{slim, alpine, bare, latest, tagRefSame, tagRefOther, ignored, other}

	tests := []struct {
		name    string
		u       Update
		in      []Pin
		skipped []Skip
		err     error
	}{
		{
			name: "a named tag keeps its variant",
			u:    Update{Image: "python", Digest: digestB, Tag: "3.14.7-slim", PinTags: true},
			in:   []Pin{slim, bare, tagRefSame},
			skipped: []Skip{
				{File: "a.yaml", Line: 2, Tag: "3.14.6-alpine", Reason: "variant -alpine differs from the set's tag 3.14.7-slim (variant -slim)"},
				{File: "c.yaml", Line: 3, Tag: "latest", Reason: `variant "latest" (not a version) differs from the set's tag 3.14.7-slim (variant -slim)`},
				{File: "d.yaml", Line: 5, Tag: "3.14.6-slim", Reason: "a tag reference is pinned only to its own tag's digest, and the set's tag is 3.14.7-slim"},
			},
		},
		{
			name: "a tag that is not a version matches only itself",
			u:    Update{Image: "python", Digest: digestB, Tag: "latest"},
			in:   []Pin{bare, latest},
			skipped: []Skip{
				{File: "a.yaml", Line: 1, Tag: "3.14.6-slim", Reason: `variant -slim differs from the set's tag latest (variant "latest" (not a version))`},
				{File: "a.yaml", Line: 2, Tag: "3.14.6-alpine", Reason: `variant -alpine differs from the set's tag latest (variant "latest" (not a version))`},
			},
		},
		{
			name: "no tag and several variants is refused",
			u:    Update{Image: "python", Digest: digestB},
			err:  ErrMixedVariants,
		},
		{
			name: "no tag, any variant",
			u:    Update{Image: "python", Digest: digestB, AnyVariant: true, PinTags: true},
			in:   []Pin{slim, alpine, bare, latest},
			skipped: []Skip{
				{File: "d.yaml", Line: 4, Tag: "3.14.7-slim", Reason: "a tag reference is pinned only when the set names its tag, and it names none"},
				{File: "d.yaml", Line: 5, Tag: "3.14.6-slim", Reason: "a tag reference is pinned only when the set names its tag, and it names none"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, skipped, err := Decide(tc.u, all)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Decide error %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.in, in); diff != "" {
				t.Errorf("in scope (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideOneVariantWithoutTag(t *testing.T) {
	web := "127.0.0.1:5000/org/web"
	found := []Pin{
		{File: "a.yaml", Line: 1, Image: web, Tag: "v1", Digest: digestA},
		{File: "b.yaml", Line: 1, Image: web, Tag: "v2", Digest: digestA},
		{File: "c.yaml", Line: 1, Image: web, Digest: digestA},
	}
	in, skipped, err := Decide(Update{Image: web, Digest: digestB}, found)
	if err != nil || len(in) != 3 || len(skipped) != 0 {
		t.Errorf("Decide = %d in, %v skipped, %v; want all 3 in scope (v1 and v2 share the empty variant)", len(in), skipped, err)
	}
}
