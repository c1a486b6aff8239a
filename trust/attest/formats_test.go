package attest_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
	"pinbot.dev/pinbot/trust/sign"
)

// TestAttestationsStayBounded: a digest proven and soaked over and over
// in three environments keeps one attestation per repository in each
// format, not one per proof: Kyverno refuses an image with more than 50
// referrers, and judges every attestation of a type, so the one left
// carries the whole record (provenIn): each environment at its furthest
// stage and longest proof. pinbot's own verification reads any
// environment from it. The legacy .att image's layer is annotated as
// cosign writes it. On a registry with and without the Referrers API
// (Gitea's has none: the tag scheme's index is rewritten).
func TestAttestationsStayBounded(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "tag scheme"}[referrers], func(t *testing.T) {
			image, digest := pushed(t, referrers)
			subject, _ := name.NewDigest(image + "@" + digest)
			key, pub := newKey(t)
			keys, err := trust.KeyOf("cosign.pub", pub)
			if err != nil {
				t.Fatal(err)
			}
			reg, err := registry.New()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// A signature beside them counts too.
			if _, err := sign.Image(ctx, key, subject); err != nil {
				t.Fatal(err)
			}
			for round := range 4 {
				for _, env := range []string{"dev", "staging", "prod"} {
					for _, stage := range []string{proven.StageProven, proven.StageSoaked} {
						p := proven.Predicate{Environment: env, Repository: "acme/manifests", Image: image, Digest: digest, Stage: stage,
							ProvenFor: proven.Duration(time.Duration(round+1) * time.Hour)}
						if round == 3 && env == "prod" {
							p.Stage = proven.StageProven // proven again, after a break: it soaked before
						}
						if p, err = attest.Record(ctx, reg, keys, p); err != nil {
							t.Fatal(err)
						}
						if _, err := attest.Write(ctx, key, p, attest.FormatBoth); err != nil {
							t.Fatalf("round %d, %s %s: %s", round, env, stage, err)
						}
					}
				}
			}
			idx, err := remote.Referrers(subject)
			if err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			if n := len(im.Manifests); n != 2 {
				t.Errorf("%d referrers after 24 attestations and a signature; want 2", n)
			}
			for _, m := range im.Manifests {
				if _, err := remote.Get(subject.Context().Digest(m.Digest.String())); err != nil {
					t.Errorf("the index lists %s, which cannot be read: %s", m.Digest, err)
				}
			}
			att, err := remote.Image(sign.LegacyTag(subject))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := att.Manifest()
			if len(m.Layers) != 1 {
				t.Fatalf("the legacy .att image holds %d layers; want 1", len(m.Layers))
			}
			l := m.Layers[0]
			layer, _ := att.LayerByDigest(l.Digest)
			rc, _ := layer.Uncompressed()
			data, _ := io.ReadAll(rc)
			var e sign.Envelope
			var st struct {
				Predicate proven.Predicate `json:"predicate"`
			}
			if l.MediaType != sign.EnvelopeMediaType || l.Annotations["predicateType"] != proven.PredicateType ||
				json.Unmarshal(data, &e) != nil || json.Unmarshal(e.Payload, &st) != nil || len(e.Signatures) != 1 {
				t.Fatalf("the legacy layer: %s %v: %.200s", l.MediaType, l.Annotations, data)
			}
			for _, env := range []string{"dev", "staging", "prod"} {
				if got := st.Predicate.ProvenIn[env]; got.Stage != proven.StageSoaked || got.ProvenFor != proven.Duration(4*time.Hour) && env != "prod" {
					t.Errorf("its record of %s: %+v; want soaked, for 4h (prod: 3h, its last soak)", env, got)
				}
				a, err := attest.Verify(ctx, reg, attest.Query{Image: image, Digest: digest, Env: env, MinSoak: 3 * time.Hour, Keys: keys})
				if err != nil || !a.Passed {
					t.Errorf("verify %s from the one attestation: %+v, %v", env, a, err)
				}
			}
		})
	}
}

// TestTheLegacyFormatIsReadBack: an attestation written only in cosign's
// older format (format: legacy) passes pinbot's own verification as the
// bundle does, and not with another key.
func TestTheLegacyFormatIsReadBack(t *testing.T) {
	image, digest := pushed(t, true)
	key, pub := newKey(t)
	_, otherPub := newKey(t)
	p := proven.Predicate{Environment: "staging", Image: image, Digest: digest, Stage: proven.StageSoaked, ProvenFor: proven.Duration(time.Hour)}
	w, err := attest.Write(context.Background(), key, p, attest.FormatLegacy)
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := name.NewDigest(image + "@" + digest)
	if idx, err := remote.Referrers(subject); err == nil {
		if im, _ := idx.IndexManifest(); len(im.Manifests) != 0 {
			t.Errorf("format legacy attached %d referrers", len(im.Manifests))
		}
	}
	if w.Ref.DigestStr() == "" {
		t.Errorf("Written.Ref = %v, want the .att image's digest", w.Ref)
	}
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key    []byte
		passed bool
	}{{pub, true}, {otherPub, false}} {
		keys, err := trust.LoadKeys([]string{"k.pub"}, fstest.MapFS{"k.pub": {Data: tc.key}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := attest.Verify(context.Background(), reg, attest.Query{Image: image, Digest: digest, Env: "staging", Keys: keys})
		if err != nil || a.Passed != tc.passed {
			t.Errorf("verify with the %s key: %+v, %v; want passed %t", map[bool]string{true: "signing", false: "other"}[tc.passed], a, err, tc.passed)
		}
	}
}

// TestSummaryOfASoakedProof: the VSA beside a soaked proof names the
// verifier, the digest, the environment's rule by URI and digest, the
// proven-running attestation it read, PASSED, and a level of pinbot's
// own (not SLSA_); its levels read the soak as people write it. It is
// written for a soaked proof only, and one per repository and
// environment stays attached.
func TestSummaryOfASoakedProof(t *testing.T) {
	for soak, want := range map[time.Duration]string{24 * time.Hour: "PINBOT_PROVEN_RUNNING_STAGING_24H", 90 * time.Minute: "PINBOT_PROVEN_RUNNING_STAGING_1H30M",
		10 * time.Second: "PINBOT_PROVEN_RUNNING_STAGING_10S", 0: "PINBOT_PROVEN_RUNNING_STAGING"} {
		if got := attest.Level("staging", soak); got != want {
			t.Errorf("Level(staging, %s) = %s, want %s", soak, got, want)
		}
	}
	if got := attest.Level("prod-eu.1", 0); got != "PINBOT_PROVEN_RUNNING_PROD_EU_1" {
		t.Errorf("Level(prod-eu.1) = %s", got)
	}
	image, digest := pushed(t, true)
	key, _ := newKey(t)
	ctx := context.Background()
	p := proven.Predicate{Environment: "staging", Repository: "acme/manifests", Image: image, Digest: digest, Stage: proven.StageProven,
		Soak: proven.Duration(24 * time.Hour), Rules: proven.Rules, Pinbot: "v0.5.0", AttestedAt: time.Now().UTC()}
	w, err := attest.Write(ctx, key, p, attest.FormatBundle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attest.WriteSummary(ctx, key, p, w.Ref, attest.DefaultVerifier); err == nil {
		t.Error("a summary of a proof not soaked was written")
	}
	p.Stage = proven.StageSoaked
	var last name.Digest
	for range 3 {
		if last, err = attest.WriteSummary(ctx, key, p, w.Ref, attest.DefaultVerifier); err != nil {
			t.Fatal(err)
		}
	}
	subject, _ := name.NewDigest(image + "@" + digest)
	idx, _ := remote.Referrers(subject)
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 2 {
		t.Errorf("%d referrers after an attestation and three summaries; want 2", len(im.Manifests))
	}
	v := attest.SummaryOf(p, w.Ref, attest.DefaultVerifier)
	if v.VerificationResult != "PASSED" || v.VerifiedLevels[0] != "PINBOT_PROVEN_RUNNING_STAGING_24H" || v.ResourceURI != "oci://"+image+"@"+digest ||
		v.InputAttestations[0].Digest["sha256"] != strings.TrimPrefix(w.Ref.DigestStr(), "sha256:") || len(v.Policy.Digest["sha256"]) != 64 ||
		!strings.Contains(v.Policy.URI, "environment=staging") || v.Verifier.ID != attest.DefaultVerifier {
		t.Errorf("summary %+v", v)
	}
	if last.DigestStr() == "" {
		t.Error("no summary digest")
	}
}

// pushed starts an in-memory registry (with or without the Referrers
// API) holding one random image, acme/web:v1, and returns the image's
// repository and digest.
func pushed(t *testing.T, referrers bool) (image, digest string) {
	t.Helper()
	return pushedThrough(t, referrers, func(reg http.Handler) http.Handler { return reg })
}

// pushedThrough is pushed with the registry behind wrap.
func pushedThrough(t *testing.T, referrers bool, wrap func(http.Handler) http.Handler) (image, digest string) {
	t.Helper()
	srv := httptest.NewServer(wrap(ggcrregistry.New(ggcrregistry.WithReferrersSupport(referrers), ggcrregistry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	image = strings.TrimPrefix(srv.URL, "http://") + "/acme/web"
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(image + ":v1")
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return image, d.String()
}

// TestARegistryThatRefusesTheLegacyTagStillGetsTheBundle: with format
// both, a registry that refuses the sha256-<hex>.att tag keeps the bundle
// referrer, and Write says what failed (serve records it as an
// AttestationFailed decision).
func TestARegistryThatRefusesTheLegacyTagStillGetsTheBundle(t *testing.T) {
	image, digest := pushedThrough(t, true, func(reg http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".att") {
				http.Error(w, `{"errors":[{"code":"DENIED","message":"no .att tags here"}]}`, http.StatusForbidden)
				return
			}
			reg.ServeHTTP(w, r)
		})
	})
	key, _ := newKey(t)
	p := proven.Predicate{Environment: "staging", Repository: "acme/manifests", Image: image, Digest: digest, Stage: proven.StageSoaked}
	w, err := attest.Write(context.Background(), key, p, attest.FormatBoth)
	if err == nil || !strings.Contains(err.Error(), "legacy attestations") || w.Ref.DigestStr() == "" {
		t.Fatalf("Write = %+v, %v; want the bundle written and the legacy write's failure", w, err)
	}
	subject, _ := name.NewDigest(image + "@" + digest)
	idx, err := remote.Referrers(subject)
	if err != nil {
		t.Fatal(err)
	}
	if im, _ := idx.IndexManifest(); len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != w.Ref.DigestStr() {
		t.Errorf("referrers %+v, want the bundle %s", im.Manifests, w.Ref.DigestStr())
	}
}

// TestTheRecordTrustsOnlyItsOwnKey: someone who may push to the
// registry attaches a statement signed by another key claiming the digest
// soaked in prod. The record pinbot carries on (Record) never takes it
// in: pinbot would sign what it never saw.
func TestTheRecordTrustsOnlyItsOwnKey(t *testing.T) {
	image, digest := pushed(t, true)
	_, pub := newKey(t)
	forger, _ := newKey(t)
	ctx := context.Background()
	forged := proven.Predicate{Environment: "prod", Repository: "acme/manifests", Image: image, Digest: digest, Stage: proven.StageSoaked, ProvenFor: proven.Duration(48 * time.Hour)}
	forged.Remember()
	if _, err := attest.Write(ctx, forger, forged, attest.FormatBoth); err != nil {
		t.Fatal(err)
	}
	keys, err := trust.KeyOf("cosign.pub", pub)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := attest.Record(ctx, reg, keys, proven.Predicate{Environment: "staging", Repository: "acme/manifests", Image: image, Digest: digest, Stage: proven.StageProven})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.ProvenIn["prod"]; ok || len(p.ProvenIn) != 1 {
		t.Errorf("the record after a forged prod statement: %+v; want staging alone", p.ProvenIn)
	}
}
