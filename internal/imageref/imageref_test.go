package imageref_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"pinbot.dev/pinbot/internal/imageref"
)

const (
	d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func TestValidDigest(t *testing.T) {
	good := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{good, true},
		{strings.ToUpper(good[:7]) + good[7:], false},
		{"sha256:" + strings.Repeat("0123456789ABCDEF", 4), false},
		{"sha256:" + strings.Repeat("a", 63), false},
		{"sha256:" + strings.Repeat("a", 65), false},
		{"sha256:" + strings.Repeat("g", 64), false},
		{"sha512:" + strings.Repeat("a", 128), false},
		{strings.Repeat("a", 64), false},
		{"", false},
		{good + "\n", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := imageref.ValidDigest(tc.in); got != tc.want {
				t.Errorf("ValidDigest(%q) = %t, want %t", tc.in, got, tc.want)
			}
			err := imageref.CheckDigest(tc.in)
			if got := err == nil; got != tc.want {
				t.Fatalf("CheckDigest(%q) = %v, want error %t", tc.in, err, !tc.want)
			}
			if err != nil && (!errors.Is(err, imageref.ErrInvalidDigest) || !strings.Contains(err.Error(), strconv.Quote(tc.in))) {
				t.Errorf("CheckDigest(%q) = %v, want ErrInvalidDigest naming the digest", tc.in, err)
			}
		})
	}
}

func TestShort(t *testing.T) {
	for in, want := range map[string]string{
		d2:                     "sha256:222222222222",
		"sha256:2222222222222": "sha256:222222222222",
		"sha256:222222222222":  "sha256:222222222222",
		"sha256:abc":           "sha256:abc",
		"":                     "",
	} {
		if got := imageref.Short(in); got != want {
			t.Errorf("Short(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in                string
		name, tag, digest string
	}{
		{"nginx", "nginx", "", ""},
		{"nginx:1.27", "nginx", "1.27", ""},
		{"registry:5000/org/app", "registry:5000/org/app", "", ""},
		{"registry:5000/org/app:v1@" + d1, "registry:5000/org/app", "v1", d1},
		{"registry:5000/org/app@" + d1, "registry:5000/org/app", "", d1},
		{"app@sha512:abc", "app", "", "sha512:abc"},
		{"host:5000", "host", "5000", ""},
		{"[::1]:5000/app:v1", "[::1]:5000/app", "v1", ""},
		{"app:", "app", "", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			name, tag, digest := imageref.Split(tc.in)
			if diff := cmp.Diff([]string{tc.name, tc.tag, tc.digest}, []string{name, tag, digest}); diff != "" {
				t.Errorf("Split(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		ref     string
		want    imageref.Ref
		wantErr string
		is      error
	}{
		{ref: "nginx", want: imageref.Ref{Repository: "index.docker.io/library/nginx"}},
		{ref: "nginx:1.27", want: imageref.Ref{Repository: "index.docker.io/library/nginx", Tag: "1.27"}},
		{ref: "docker.io/nginx", want: imageref.Ref{Repository: "index.docker.io/library/nginx"}},
		{ref: "index.docker.io/library/nginx", want: imageref.Ref{Repository: "index.docker.io/library/nginx"}},
		{ref: "org/app", want: imageref.Ref{Repository: "index.docker.io/org/app"}},
		{ref: "localhost/app", want: imageref.Ref{Repository: "localhost/app"}},
		{ref: "127.0.0.1:3000/org/app", want: imageref.Ref{Repository: "127.0.0.1:3000/org/app"}},
		{ref: "127.0.0.1:3000/org/app:v2@" + d2, want: imageref.Ref{Repository: "127.0.0.1:3000/org/app", Tag: "v2", Digest: d2}},
		{ref: "registry.example/org/app@" + d1, want: imageref.Ref{Repository: "registry.example/org/app", Digest: d1}},
		{ref: "[::1]:5000/a__b/c-d.e:V_1.0-x", want: imageref.Ref{Repository: "[::1]:5000/a__b/c-d.e", Tag: "V_1.0-x"}},
		{ref: "", wantErr: "empty image reference", is: imageref.ErrInvalidReference},
		{ref: "app@sha256:abc", wantErr: "invalid digest", is: imageref.ErrInvalidDigest},
		{ref: "app@sha512:" + strings.Repeat("a", 128), wantErr: "invalid digest", is: imageref.ErrInvalidDigest},
		{ref: "app:", wantErr: "empty tag", is: imageref.ErrInvalidReference},
		{ref: "app:-x", wantErr: `tag "-x"`, is: imageref.ErrInvalidReference},
		{ref: "app:" + strings.Repeat("a", 129), wantErr: "tag", is: imageref.ErrInvalidReference},
		{ref: "UPPER/app", wantErr: "UPPER/app", is: imageref.ErrInvalidReference},
		{ref: "-bad.host/app", wantErr: `registry host "-bad.host"`, is: imageref.ErrInvalidReference},
		{ref: "host:99999999/app", wantErr: "registry host", is: imageref.ErrInvalidReference},
		{ref: "org//app", wantErr: "repository path", is: imageref.ErrInvalidReference},
		{ref: " nginx", wantErr: "repository path", is: imageref.ErrInvalidReference},
		{ref: "https://host/app", wantErr: "https://host/app", is: imageref.ErrInvalidReference},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := imageref.Parse(tc.ref)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, tc.is) {
					t.Fatalf("Parse(%q) error = %v, want it to contain %q and wrap %v", tc.ref, err, tc.wantErr, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %s", tc.ref, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.ref, diff)
			}
			if again, err := imageref.Parse(got.String()); err != nil || again != got {
				t.Errorf("Parse(%q) = %v, %v; want the same Ref back", got.String(), again, err)
			}
		})
	}
}

func TestRefParts(t *testing.T) {
	r, err := imageref.Parse("127.0.0.1:3000/org/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{r.Registry(), r.Path(), r.String()}; !cmp.Equal(got, []string{"127.0.0.1:3000", "org/app", "127.0.0.1:3000/org/app:v1"}) {
		t.Errorf("Registry, Path, String = %q", got)
	}
}

func TestParseRepository(t *testing.T) {
	if got, err := imageref.ParseRepository("docker.io/nginx"); err != nil || got != "index.docker.io/library/nginx" {
		t.Errorf("ParseRepository(docker.io/nginx) = %q, %v", got, err)
	}
	for _, bad := range []string{"", "nginx:1", "nginx@" + d1, "Nginx"} {
		if _, err := imageref.ParseRepository(bad); !errors.Is(err, imageref.ErrInvalidReference) || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRepository(%q) error = %v, want ErrInvalidReference naming it", bad, err)
		}
	}
}

// seeds are references for the differential fuzz test.
var seeds = []string{
	"nginx", "nginx:1.27", "docker.io/nginx:1@" + d1, "index.docker.io/nginx", "org/app", "localhost/app",
	"localhost:5000/a/b/c:v", "127.0.0.1:3000/org/app:v2@" + d2, "[::1]:5000/app", "a.b-c.d/e_f/g__h/i-j.k",
	"app:", "app:-x", "UPPER/app", "host:/app", "host:5000", "a//b", "a/b/", ".a/b", "[::1/a",
}

// FuzzParseAgreesWithGGCR checks Parse against go-containerregistry's name
// package, whose normal form Parse promises: whatever Parse accepts, ggcr
// accepts too and names the same repository, tag and digest. (ggcr is the
// looser of the two, so the converse does not hold.)
func FuzzParseAgreesWithGGCR(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := imageref.Parse(s)
		if err != nil {
			return
		}
		ref, gerr := name.ParseReference(s, name.WeakValidation)
		if gerr != nil {
			t.Fatalf("Parse(%q) = %+v, but go-containerregistry rejects it: %v", s, got, gerr)
		}
		want := imageref.Ref{Repository: ref.Context().Name()}
		switch r := ref.(type) {
		case name.Tag:
			want.Tag = r.TagStr()
			if got.Tag == "" && want.Tag == "latest" {
				want.Tag = ""
			}
		case name.Digest:
			want.Digest = r.DigestStr()
			want.Tag = got.Tag // ggcr drops the tag of "repo:tag@digest"
			if _, err := name.NewTag(strings.TrimSuffix(s, "@"+got.Digest), name.WeakValidation); got.Tag != "" && err != nil {
				t.Fatalf("Parse(%q) tag %q, but go-containerregistry rejects it: %v", s, got.Tag, err)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Parse(%q) disagrees with go-containerregistry (-ggcr +Parse):\n%s", s, diff)
		}
	})
}
