package registry

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imageref"
)

// TestDigestMismatch serves every manifest GET with one byte added, keeping
// the real Docker-Content-Digest, and checks that each way of fetching a
// manifest notices.
func TestDigestMismatch(t *testing.T) {
	isolateDockerConfig(t, "")
	noHEAD := func(next http.Handler) http.Handler {
		return tamper(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead && isManifest(r) {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	reg := newTestRegistry(t, tamper)
	regNoHEAD := newTestRegistry(t, noHEAD)
	idx, _ := buildIndex(t, nil, false, imageSpec{platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
	digest := reg.push(t, "app:v1", idx).String()
	regNoHEAD.push(t, "app:v1", idx)

	c := newClient(t)
	amd64 := imageref.Platform{OS: "linux", Architecture: "amd64"}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Describe by tag fetches by digest", func() error { _, err := c.Describe(t.Context(), reg.host+"/app:v1"); return err }},
		{"Describe by digest", func() error { _, err := c.Describe(t.Context(), reg.host+"/app@"+digest); return err }},
		{"Resolve by tag falling back to GET", func() error { _, err := c.Resolve(t.Context(), regNoHEAD.host+"/app:v1"); return err }},
		{"Resolve by digest falling back to GET", func() error { _, err := c.Resolve(t.Context(), regNoHEAD.host+"/app@"+digest); return err }},
		{"ChildFor by tag", func() error { _, err := c.ChildFor(t.Context(), reg.host+"/app:v1", amd64); return err }},
		{"ChildFor by digest", func() error { _, err := c.ChildFor(t.Context(), reg.host+"/app@"+digest, amd64); return err }},
		{"Candidates by tag", func() error { _, err := c.Candidates(t.Context(), reg.host+"/app:v1", amd64, true); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, ErrDigestMismatch) {
				t.Fatalf("got %v, want ErrDigestMismatch", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not *Error", err)
			}
		})
	}

	// Without tampering by HEAD, resolving a tag needs no body and succeeds.
	if _, err := c.Resolve(t.Context(), reg.host+"/app:v1"); err != nil {
		t.Errorf("Resolve by HEAD: %s", err)
	}
}

// TestGGCRVerifiesOnlyByDigest records why verifyTransport exists:
// go-containerregistry checks a manifest fetched by digest, but takes one
// fetched by tag as it comes, ignoring Docker-Content-Digest.
func TestGGCRVerifiesOnlyByDigest(t *testing.T) {
	reg := newTestRegistry(t, tamper)
	img := buildImage(t, imageSpec{})
	digest := reg.push(t, "app:v1", img).String()

	byDigest, err := name.ParseReference(reg.host + "/app@" + digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Get(byDigest); err == nil {
		t.Error("ggcr accepted a tampered manifest fetched by digest; verifyTransport now carries that check alone")
	}
	byTag, err := name.ParseReference(reg.host + "/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Get(byTag)
	if err != nil {
		t.Fatalf("ggcr refused a tampered manifest by tag (%s); it now checks Docker-Content-Digest itself", err)
	}
	if d.Digest.String() == digest {
		t.Error("the tampered manifest hashes to the pushed digest; tamper did not tamper")
	}
}
