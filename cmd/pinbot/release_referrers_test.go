package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
	"pinbot.dev/pinbot/trust/sign"
)

// crowded: the soaked digest gets what a build pipeline attaches beside
// pinbot's attestations in Gitea's registry, with the real cosign (its
// signature, a CycloneDX SBOM in the older .att format, SLSA provenance
// as a bundle), then is proven and soaked twice over in three
// environments. Kyverno refuses an image with more than 50 referrers;
// the digest keeps one proven-running attestation and one summary per
// environment, the SBOM is not lost from the .att image it shares with
// pinbot's legacy attestation, and the verifiers still admit it.
func (r *releaseRig) crowded(t *testing.T, keys, password, ref string, cosignRun func(...string) (string, error), admits func(kind, env, image string) (bool, string)) {
	ctx := context.Background()
	k := filepath.Join(keys, "cosign.key")
	sbom := r.write("sbom.json", `{"bomFormat":"CycloneDX","specVersion":"1.5","version":1,"components":[]}`)
	prov := r.write("provenance.json", `{"buildDefinition":{"buildType":"https://example.test/jenkins/v1","externalParameters":{}},"runDetails":{"builder":{"id":"https://jenkins.example.test"}}}`)
	for _, args := range [][]string{
		{"sign", "--key", k, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--yes", ref},
		{"attest", "--key", k, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--new-bundle-format=false", "--type", "cyclonedx", "--predicate", sbom, "--yes", ref},
		{"attest", "--key", k, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry", "--type", "slsaprovenance1", "--predicate", prov, "--yes", ref},
	} {
		if out, err := cosignRun(args...); err != nil {
			t.Fatalf("cosign %s: %v\n%s", args[0], err, out)
		}
	}

	key, err := sign.LoadKey(k, []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(keys, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	keyset, err := trust.KeyOf("cosign.pub", pub)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	subject, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	repo := r.peers.Gitea.AdminUser + "/manifests" // serve's, so its attestations are superseded too
	for round := range 2 {
		for _, env := range []string{"dev", "staging", "prod"} {
			for _, stage := range []string{proven.StageProven, proven.StageSoaked} {
				p := proven.Predicate{Environment: env, Repository: repo, Image: subject.Context().Name(), Digest: subject.DigestStr(),
					Stage: stage, ProvenSince: time.Now(), ProvenFor: proven.Duration(time.Duration(round+1) * time.Hour), Soak: proven.Duration(time.Hour), Rules: proven.Rules}
				if p, err = attest.Record(ctx, reg, keyset, p); err != nil {
					t.Fatal(err)
				}
				w, err := attest.Write(ctx, key, p, attest.FormatBoth, auth)
				if err != nil {
					t.Fatalf("round %d, %s %s: %s", round, env, stage, err)
				}
				if stage == proven.StageSoaked {
					if _, err := attest.WriteSummary(ctx, key, p, w.Ref, "https://pinbot.test/installation", auth); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}

	idx, err := remote.Referrers(subject, auth)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	kinds := map[string]int{}
	for _, m := range im.Manifests {
		kinds[m.Annotations["dev.sigstore.bundle.predicateType"]]++
	}
	// The signature, the provenance, one proven-running and a summary
	// per environment.
	if n := len(im.Manifests); n > 50 || n != 6 || kinds[proven.PredicateType] != 1 || kinds[attest.VSAType] != 3 {
		t.Errorf("%d referrers after 12 proofs beside a signature, an SBOM and provenance, by predicate type %v; want 6", n, kinds)
	}
	if out, err := cosignRun("verify-attestation", "--key", filepath.Join(keys, "cosign.pub"), "--insecure-ignore-tlog", "--allow-http-registry", "--new-bundle-format=false", "--type", "cyclonedx", ref); err != nil {
		t.Errorf("the SBOM beside pinbot's legacy attestation is lost: %v\n%s", err, out)
	}
	for _, kind := range []string{"ClusterPolicy", "ImageValidatingPolicy", "ClusterImagePolicy"} {
		for _, env := range []string{"staging", "prod"} {
			if ok, out := admits(kind, env, ref); !ok {
				t.Errorf("%s refuses the crowded digest soaked in %s:\n%s", kind, env, out)
			}
		}
	}
}
