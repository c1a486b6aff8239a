package promote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
	"pinbot.dev/pinbot/trust/trusttest"
)

// signedRepo is a manifest repository pinning app and legacy, with a
// signature policy: legacy must be signed by keys/cosign.pub, every other
// image of the repository by a keyless identity of acme.example, with a
// SLSA provenance attestation from acme's Jenkins, source and ref.
func signedRepo(f *fixture, key *trusttest.Key, store *trusttest.Sigstore, app, legacy string, appDigest, legacyDigest string) map[string]string {
	return map[string]string{
		"keys/cosign.pub":        string(key.PublicPEM(f.t)),
		"keys/trusted_root.json": string(store.TrustedRoot(f.t)),
		".pinbot.yaml": fmt.Sprintf(`signatures:
  - images: [%q]
    keys: [keys/cosign.pub]
  - images: ["%s/%s/*"]
    trustedRoot: keys/trusted_root.json
    keyless:
      - issuer: https://ci.acme.example
        subjectRegExp: '.*@acme\.example'
    attestations:
      - predicateType: %s
        builderID: 'https://jenkins\.acme\.example/.*'
        sourceRepository: 'https://gitea\.acme\.example/acme/app'
        ref: refs/heads/main
`, legacy, f.srv.RegistryHost, f.owner, trusttest.SLSAProvenance),
		"deploy/app.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: %s@%s
        - name: legacy
          image: %s@%s
`, app, appDigest, legacy, legacyDigest),
	}
}

var acmeBuild = trusttest.Build{
	BuilderID:  "https://jenkins.acme.example/job/app/",
	Repository: "https://gitea.acme.example/acme/app",
	Ref:        "refs/heads/main",
	Commit:     "8c1f0d8e2b9a4c7d6e5f4a3b2c1d0e9f8a7b6c5d",
	Invocation: "https://jenkins.acme.example/job/app/42/",
}

// TestPromoteSigned: a digest that passes the policy is promoted, and its
// pull request says who signed it and how it was built; each digest that
// fails is refused before anything is pushed, naming the image, the
// digest and the rule.
func TestPromoteSigned(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	key, other := trusttest.NewKey(t, trusttest.ECDSA), trusttest.NewKey(t, trusttest.ECDSA)
	store := trusttest.NewSigstore(t)
	acme := store.Identity("https://ci.acme.example", "jenkins@acme.example")
	app, legacy := f.image("app"), f.image("legacy")
	v1 := f.pushImage(app, "v1", time.Time{})
	l1 := f.pushImage(legacy, "v1", time.Time{})
	f.createRepo(signedRepo(f, key, store, app, legacy, v1, l1))
	ref := func(image, digest string) string { return image + "@" + digest }
	opts := f.remoteOpts()

	// Refused, each for its own reason.
	unsigned := f.pushImage(app, "unsigned", time.Time{})
	mallory := f.pushImage(app, "mallory", time.Time{})
	trusttest.Sign(t, ref(app, mallory), store.Identity("https://ci.acme.example", "mallory@evil.example"), opts...)
	trusttest.Attest(t, ref(app, mallory), store.Identity("https://ci.acme.example", "mallory@evil.example"), trusttest.SLSAProvenance, trusttest.Provenance(acmeBuild), opts...)
	forked := f.pushImage(app, "forked", time.Time{})
	trusttest.Sign(t, ref(app, forked), acme, opts...)
	fork := acmeBuild
	fork.Repository = "https://gitea.acme.example/mallory/app"
	trusttest.Attest(t, ref(app, forked), acme, trusttest.SLSAProvenance, trusttest.Provenance(fork), opts...)
	good := f.pushImage(app, "v2", time.Time{})
	copied := f.pushImage(app, "copied", time.Time{})
	// A valid signature of the good digest, attached to another one.
	trusttest.Attach(t, ref(app, copied), trusttest.CosignSign, acme.Bundle(t, trusttest.Statement(t, good, trusttest.CosignSign, nil)), opts...)
	byOther := f.pushImage(legacy, "other", time.Time{})
	trusttest.SignLegacy(t, ref(legacy, byOther), other, trusttest.LegacyPayload(t, legacy, byOther), opts...)

	for _, tc := range []struct {
		name, image, digest, rule, reason string
	}{
		{"unsigned", app, unsigned, "signatures[1]", "no signature found"},
		{"wrong keyless subject", app, mallory, "signatures[1]", "no signature verifies"},
		{"attestation from another source repository", app, forked, "signatures[1].attestations[0]", "source repository \"https://gitea.acme.example/mallory/app\" does not match"},
		{"a signature for another digest", app, copied, "signatures[1]", "no signature verifies"},
		{"signed by another key", legacy, byOther, "signatures[0]", "no signature verifies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(ctx, f.env(), Request{Inputs: []Input{{Image: tc.image, Digest: tc.digest, Source: pr.SourceDigestFile, File: "digest"}}})
			var r *trust.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("promoting: %v; want a refusal", err)
			}
			if r.Image != tc.image || r.Digest != tc.digest || r.Rule != tc.rule || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("refusal = %+v; want %s@%s by %s, because %q", r, tc.image, tc.digest, tc.rule, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.image+"@"+tc.digest) || !strings.Contains(err.Error(), tc.rule) {
				t.Errorf("the error does not name the image, digest and rule: %v", err)
			}
			if got := f.branches(); !cmp.Equal(got, []string{"main"}) {
				t.Errorf("branches after a refused promotion = %q, want only main", got)
			}
			if prs := f.openPulls(); len(prs) != 0 {
				t.Errorf("%d pull requests after a refused promotion", len(prs))
			}
		})
	}

	// Passed: a keyless signature with its provenance.
	trusttest.Sign(t, ref(app, good), acme, opts...)
	trusttest.Attest(t, ref(app, good), acme, trusttest.SLSAProvenance, trusttest.Provenance(acmeBuild), opts...)
	res, err := Run(ctx, f.env(), Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: good, Source: pr.SourceDigestFile, File: "digest"}}})
	if err != nil {
		t.Fatalf("promoting a signed digest: %v", err)
	}
	if len(res) != 1 || res[0].Status != StatusOpened || res[0].Pull == nil {
		t.Fatalf("promoting a signed digest: %+v; want a new pull request", res)
	}
	body := res[0].Pull.Body
	for _, want := range []string{
		"#### Signed and built by",
		"| Signer | `issuer https://ci.acme.example, subject jenkins@acme.example` |",
		"| Format | Sigstore bundle (OCI referrer) |",
		"| Builder | `https://jenkins.acme.example/job/app/` |",
		"| Source | `https://gitea.acme.example/acme/app` |",
		"| Ref | `refs/heads/main` |",
		"| Commit | `" + acmeBuild.Commit + "` |",
		"| Build | `https://jenkins.acme.example/job/app/42/` |",
		"| Policy | `signatures[1]` of `.pinbot.yaml` |",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, body)
		}
	}
	if s := res[0].Signatures[app]; !s.Guarded || s.SignedAt.IsZero() || len(s.Attestations) != 1 {
		t.Errorf("result signatures = %+v", res[0].Signatures)
	}

	// Passed: the legacy signature tag, by the rule's key.
	l2 := f.pushImage(legacy, "v2", time.Time{})
	trusttest.SignLegacy(t, ref(legacy, l2), key, trusttest.LegacyPayload(t, legacy, l2), opts...)
	res, err = Run(ctx, f.env(), Request{Inputs: []Input{{Image: legacy, Digest: l2, Source: pr.SourceDigestFile, File: "digest"}}})
	if err != nil {
		t.Fatalf("promoting a digest with a legacy signature: %v", err)
	}
	if body := res[0].Pull.Body; !strings.Contains(body, "| Signer | `key keys/cosign.pub (SHA256:") || !strings.Contains(body, "| Format | cosign signature tag (.sig) |") {
		t.Errorf("the legacy promotion's body:\n%s", body)
	}
}

// TestPromoteUnguarded: an image no rule names is promoted, and the body
// says no policy checked it rather than nothing.
func TestPromoteUnguarded(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{"deploy/app.yaml": "image: " + app + "@" + v1 + "\n"})
	v2 := f.pushImage(app, "v2", time.Time{})
	res, err := Run(testContext(t), f.env(), Request{Inputs: []Input{{Image: app, Digest: v2, Source: pr.SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res[0].Pull.Body, "No signature policy for this image") {
		t.Errorf("the body does not say the image is unguarded:\n%s", res[0].Pull.Body)
	}
}

// TestGiteaReferrers records which signature formats Gitea's registry
// takes: it has no Referrers API (404), so cosign's bundles land in the
// referrers tag schema, which TestPromoteSigned reads; the legacy .sig tag
// is an ordinary tag. If Gitea grows the API, this fails, and the API path
// (tested on go-containerregistry's registry in package trust) should be
// tested on Gitea too.
func TestGiteaReferrers(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	d := f.pushImage(app, "v1", time.Time{})
	path := strings.TrimPrefix(app, f.srv.RegistryHost+"/")
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+f.srv.RegistryHost+"/v2/"+path+"/referrers/"+d, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(f.srv.AdminUser, f.srv.Token)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("Gitea answers the Referrers API with %d; it used to answer 404", resp.StatusCode)
	}
}

// TestDriftSigned: a tag that moves to a digest the policy refuses is
// reported as failed, naming the rule, and proposed by no pull request;
// once the digest is signed, drift proposes it with its signer.
func TestDriftSigned(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	key := trusttest.NewKey(t, trusttest.RSA)
	app := f.image("app")
	v1 := f.pushImage(app, "main", time.Time{})
	f.createRepo(map[string]string{
		"keys/cosign.pub": string(key.PublicPEM(t)),
		".pinbot.yaml":    "signatures:\n  - images: [" + app + "]\n    keys: [keys/cosign.pub]\n",
		"app.yaml":        "image: " + app + ":main@" + v1 + "\n",
	})
	v2 := f.pushImage(app, "main", time.Time{})
	rep, err := Drift(ctx, f.env(), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failed) != 1 || !errors.Is(rep.Failed[0], trust.ErrRefused) || !strings.Contains(rep.Failed[0].Error(), "signatures[0]") {
		t.Fatalf("failed = %v; want the refusal of %s", rep.Failed, v2)
	}
	if len(rep.Moved) != 0 || len(f.openPulls()) != 0 || !cmp.Equal(f.branches(), []string{"main"}) {
		t.Errorf("an unsigned digest was proposed: moved %+v, branches %q", rep.Moved, f.branches())
	}

	trusttest.Sign(t, app+"@"+v2, key, f.remoteOpts()...)
	rep, err = Drift(ctx, f.env(), DriftOptions{})
	if err != nil || len(rep.Failed) != 0 || rep.Count(StatusOpened) != 1 {
		t.Fatalf("drift after signing: %s, %v", rep.Summary(), err)
	}
	if body := rep.Results[0].Pull.Body; !strings.Contains(body, "| Signer | `key keys/cosign.pub (SHA256:") {
		t.Errorf("the drift pull request does not name the signer:\n%s", body)
	}
}

// TestOperatorPolicyIsAFloor: a repository whose .pinbot.yaml was narrowed
// to no signature policy at all (one commit from the very credential the
// policy guards against) still cannot promote an unsigned digest past the
// operator's policy, Request.Policy (serve's signatures:, or
// --signature-policy).
func TestOperatorPolicyIsAFloor(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{".pinbot.yaml": "signatures: []\n", "deploy/app.yaml": "image: " + app + "@" + v1 + "\n"})
	v2 := f.pushImage(app, "v2", time.Time{})
	key := trusttest.NewKey(t, "ecdsa")
	floor, err := trust.Compile(policy.Rules{{Images: []string{app}, Keys: []string{"cosign.pub"}}}, fstest.MapFS{"cosign.pub": {Data: key.PublicPEM(t)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(testContext(t), f.env(), Request{Inputs: []Input{{Image: app, Digest: v2, Source: pr.SourceFlag}}, Policy: floor})
	var refusal *trust.Refusal
	if !errors.As(err, &refusal) || refusal.Digest != v2 {
		t.Fatalf("Run = %v, want the operator's policy to refuse the unsigned digest", err)
	}
	if pulls := f.openPulls(); len(pulls) != 0 {
		t.Errorf("%d pull requests opened for a refused digest", len(pulls))
	}
}
