package attest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"log"
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
	"pinbot.dev/pinbot/trust/policy"
	"pinbot.dev/pinbot/trust/proven"
	"pinbot.dev/pinbot/trust/sign"
)

func newKey(t *testing.T) (*sign.Key, []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.NewKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicPEM()
	if err != nil {
		t.Fatal(err)
	}
	return k, pub
}

// TestWriteThenVerify: an attestation written for a proof is read back
// from the registry alone and passes for its environment and soak; it
// fails for another key, another environment, a longer soak, and a
// digest with none, each saying why. On a registry with and without the
// Referrers API.
func TestWriteThenVerify(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "tag scheme"}[referrers], func(t *testing.T) {
			srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(referrers), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
			t.Cleanup(srv.Close)
			image := strings.TrimPrefix(srv.URL, "http://") + "/acme/web"
			push := func(tag string) string {
				img, err := random.Image(512, 1)
				if err != nil {
					t.Fatal(err)
				}
				ref, _ := name.ParseReference(image + ":" + tag)
				if err := remote.Write(ref, img); err != nil {
					t.Fatal(err)
				}
				d, _ := img.Digest()
				return d.String()
			}
			digest, other := push("v3"), push("v4")
			key, pub := newKey(t)
			imageKey, otherPub := newKey(t)
			files := fstest.MapFS{"cosign.pub": {Data: pub}, "other.pub": {Data: otherPub}}
			since := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
			p := proven.Predicate{Environment: "staging", Repository: "acme/manifests", Commit: "0123456789abcdef0123456789abcdef01234567",
				Image: image, Digest: digest, Tag: "v3", Stage: proven.StageSoaked, ProvenSince: since, ProvenFor: proven.Duration(25 * time.Hour),
				Soak: proven.Duration(24 * time.Hour), Clusters: []string{"in-cluster"}, Apps: []string{"web-staging"},
				Pods:  []proven.Pod{{Namespace: "staging", Name: "web-1", Container: "app", Node: "node-a", Running: digest}},
				Rules: proven.Rules, Pinbot: "v0.4.0", AttestedAt: since.Add(25 * time.Hour)}
			ctx := context.Background()
			if _, err := attest.Write(ctx, key, p, attest.FormatBoth); err != nil {
				t.Fatal(err)
			}
			reg, err := registry.New()
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name   string
				q      attest.Query
				key    string
				passed bool
				why    string
			}{
				{"its environment and soak", attest.Query{Env: "staging", MinSoak: 24 * time.Hour}, "cosign.pub", true, ""},
				{"another key", attest.Query{Env: "staging"}, "other.pub", false, "key other.pub"},
				{"another environment", attest.Query{Env: "prod"}, "cosign.pub", false, "proven in staging, not prod"},
				{"a longer soak", attest.Query{Env: "staging", MinSoak: 48 * time.Hour}, "cosign.pub", false, "for 25h0m0s (attested at 2026-12-05T10:00:00Z), less than 48h0m0s"},
				{"no attestation", attest.Query{Digest: other, Env: "staging"}, "cosign.pub", false, "no " + proven.PredicateType + " attestation is attached"},
			} {
				q := tc.q
				q.Image = image
				if q.Keys, err = trust.LoadKeys([]string{tc.key}, files); err != nil {
					t.Fatal(err)
				}
				if q.Digest == "" {
					q.Digest = digest
				}
				a, err := attest.Verify(ctx, reg, q)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if a.Passed != tc.passed || !strings.Contains(strings.Join(a.Why, "\n"), tc.why) {
					t.Errorf("%s: passed %v, why %q; want %v and %q", tc.name, a.Passed, a.Why, tc.passed, tc.why)
				}
				if a.Passed && (a.Predicate.Pods[0].Name != "web-1" || a.Predicate.Tag != "v3" || !strings.HasPrefix(a.Signer, "key cosign.pub")) {
					t.Errorf("%s: predicate %+v signer %q", tc.name, a.Predicate, a.Signer)
				}
			}

			// The signature policy requires it the same way, with the
			// attestation's own key: the image is signed by another, which
			// vouches for nothing that ran.
			subject, _ := name.NewDigest(image + "@" + digest)
			if _, err := sign.Image(ctx, imageKey, subject); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name, env, key string
				soak           time.Duration
				why            string
			}{
				{"its environment and soak", "staging", "cosign.pub", 24 * time.Hour, ""},
				{"another environment", "prod", "cosign.pub", 0, "is refused by signatures[0].attestations[0]: no attestation of predicate type " + proven.PredicateType + " passes: "},
				{"a longer soak", "staging", "cosign.pub", 48 * time.Hour, "for 25h0m0s (attested at 2026-12-05T10:00:00Z), less than 48h0m0s"},
				{"the image's key as the attestation's", "staging", "other.pub", 24 * time.Hour, "key other.pub: "},
			} {
				v, err := trust.Compile(policy.Rules{{Images: []string{image}, Keys: []string{"other.pub"},
					Attestations: []policy.Attestation{{PredicateType: proven.PredicateType, Environment: tc.env, MinSoak: tc.soak, Keys: []string{tc.key}}}}}, files)
				if err != nil {
					t.Fatal(err)
				}
				prov, err := v.Check(ctx, reg, trust.Subject{Image: image, Digest: digest})
				switch {
				case tc.why == "" && err != nil:
					t.Errorf("policy, %s: %v", tc.name, err)
				case tc.why == "" && (len(prov.Attestations) != 1 || prov.Attestations[0].Environment != "staging" || prov.Attestations[0].ProvenFor != "25h0m0s"):
					t.Errorf("policy, %s: %+v", tc.name, prov.Attestations)
				case tc.why != "" && (err == nil || !strings.Contains(err.Error(), tc.why)):
					t.Errorf("policy, %s: %v; want %q", tc.name, err, tc.why)
				}
			}

			// A Reader keeps what it read until told the digest was
			// attested.
			keys, err := trust.LoadKeys([]string{"cosign.pub"}, files)
			if err != nil {
				t.Fatal(err)
			}
			reader := attest.NewReader(reg)
			if at := reader.Read(ctx, keys, image, other, "staging"); at.Passed || !strings.Contains(at.Why, "no "+proven.PredicateType+" attestation is attached") {
				t.Fatalf("before its attestation: %+v", at)
			}
			q := p
			q.Digest, q.Pods = other, nil
			if _, err := attest.Write(ctx, key, q, attest.FormatBoth); err != nil {
				t.Fatal(err)
			}
			if at := reader.Read(ctx, keys, image, other, "staging"); at.Passed {
				t.Errorf("read again at once: %+v, want the kept answer", at)
			}
			reader.Forget(image, other)
			if at := reader.Read(ctx, keys, image, other, "staging"); !at.Passed || at.ProvenFor != 25*time.Hour || !at.ProvenSince.Equal(since) {
				t.Errorf("after Forget: %+v, want it passed, proven for 25h since %s", at, since)
			}
		})
	}
}
