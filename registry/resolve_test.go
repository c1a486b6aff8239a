package registry

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestResolve(t *testing.T) {
	isolateDockerConfig(t, "")
	var calls counter
	reg := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isManifest(r) {
				calls.add(r.Method)
			}
			next.ServeHTTP(w, r)
		})
	})
	img := buildImage(t, imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
	imgDigest := reg.push(t, "team/app:v1", img).String()
	idx, _ := buildIndex(t, nil, true,
		imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64"}},
		imageSpec{platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}})
	idxDigest := reg.push(t, "team/multi:v2", idx).String()
	repo := reg.host + "/team/app"

	for _, tc := range []struct {
		name string
		ref  string
		want Descriptor
	}{{
		name: "tag",
		ref:  repo + ":v1",
		want: Descriptor{Reference: repo + ":v1", Repository: repo, Digest: imgDigest, MediaType: string(types.OCIManifestSchema1), Size: rawSize(t, img)},
	}, {
		name: "digest",
		ref:  repo + "@" + imgDigest,
		want: Descriptor{Reference: repo + "@" + imgDigest, Repository: repo, Digest: imgDigest, MediaType: string(types.OCIManifestSchema1), Size: rawSize(t, img)},
	}, {
		name: "tag and digest",
		ref:  repo + ":v1@" + imgDigest,
		want: Descriptor{Reference: repo + ":v1@" + imgDigest, Repository: repo, Digest: imgDigest, MediaType: string(types.OCIManifestSchema1), Size: rawSize(t, img)},
	}, {
		name: "index",
		ref:  reg.host + "/team/multi:v2",
		want: Descriptor{Reference: reg.host + "/team/multi:v2", Repository: reg.host + "/team/multi", Digest: idxDigest, MediaType: string(types.OCIImageIndex), Size: rawSize(t, idx)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.get(http.MethodGet)
			got, err := newClient(t).Resolve(t.Context(), tc.ref)
			if err != nil {
				t.Fatalf("Resolve(%q): %s", tc.ref, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tc.ref, diff)
			}
			if n := calls.get(http.MethodGet) - before; n != 0 {
				t.Errorf("Resolve sent %d manifest GETs, want HEAD only", n)
			}
		})
	}
}

func TestResolveNotFound(t *testing.T) {
	isolateDockerConfig(t, "")
	var calls counter
	reg := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isManifest(r) {
				calls.add(r.Method)
			}
			next.ServeHTTP(w, r)
		})
	})
	reg.push(t, "team/app:v1", buildImage(t, imageSpec{}))
	for _, ref := range []string{
		reg.host + "/team/app:missing",
		reg.host + "/team/nothing:v1",
		reg.host + "/team/app@sha256:" + strings.Repeat("ab", 32),
	} {
		t.Run(ref, func(t *testing.T) {
			_, err := newClient(t).Resolve(t.Context(), ref)
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Resolve(%q) = %v, want ErrNotFound", ref, err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			want := Error{Op: "resolving", Reference: ref, Registry: reg.host, StatusCode: 404}
			got := *e
			got.Err = nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error fields (-want +got):\n%s", diff)
			}
			for _, s := range []string{ref, "404"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
	if n := calls.get(http.MethodGet); n != 0 {
		t.Errorf("a 404 on HEAD led to %d GETs, want none", n)
	}
}

// TestResolveFallsBackToGet serves HEAD answers registries give in the wild
// and checks which ones lead to a GET.
func TestResolveFallsBackToGet(t *testing.T) {
	isolateDockerConfig(t, "")
	for _, tc := range []struct {
		name     string
		head     func(w http.ResponseWriter, r *http.Request, next http.Handler)
		wantGETs int
		wantErr  int // status code in the error, 0 for success
	}{{
		name: "HEAD not allowed",
		head: func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		},
		wantGETs: 1,
	}, {
		name: "HEAD without Docker-Content-Digest",
		head: func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			next.ServeHTTP(headerDropper{w, "Docker-Content-Digest"}, r)
		},
		wantGETs: 1,
	}, {
		name: "HEAD 401",
		head: func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			w.WriteHeader(http.StatusUnauthorized)
		},
		wantErr: 401,
	}, {
		name: "HEAD 403",
		head: func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			w.WriteHeader(http.StatusForbidden)
		},
		wantErr: 403,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var calls counter
			reg := newTestRegistry(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !isManifest(r) {
						next.ServeHTTP(w, r)
						return
					}
					calls.add(r.Method)
					if r.Method == http.MethodHead {
						tc.head(w, r, next)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			want := reg.push(t, "app:v1", buildImage(t, imageSpec{})).String()
			ref := reg.host + "/app:v1"
			got, err := newClient(t).Resolve(t.Context(), ref)
			switch {
			case tc.wantErr == 0 && err != nil:
				t.Fatalf("Resolve: %s", err)
			case tc.wantErr == 0 && got.Digest != want:
				t.Errorf("digest = %s, want %s", got.Digest, want)
			case tc.wantErr != 0:
				var e *Error
				if !errors.As(err, &e) || e.StatusCode != tc.wantErr {
					t.Errorf("Resolve = %v, want an *Error with status %d", err, tc.wantErr)
				}
			}
			if n := calls.get(http.MethodGet); n != tc.wantGETs {
				t.Errorf("manifest GETs = %d, want %d", n, tc.wantGETs)
			}
		})
	}
}

// headerDropper removes one header from a response.
type headerDropper struct {
	http.ResponseWriter
	drop string
}

func (h headerDropper) WriteHeader(code int) {
	h.Header().Del(h.drop)
	h.ResponseWriter.WriteHeader(code)
}

func TestResolveBadReference(t *testing.T) {
	_, err := newClient(t).Resolve(t.Context(), "Not A Reference!")
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 0 || !strings.Contains(err.Error(), "Not A Reference!") {
		t.Errorf("Resolve(bad) = %v, want an *Error naming the reference", err)
	}
}
