package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
	"pinbot.dev/pinbot/trust/sign"
)

// verifiers runs the admission policies docs/attestations.md shows, read
// from the page, on the verifiers platform teams run: Kyverno's CLI
// (kyverno apply, the engine of its admission controller) and Sigstore
// policy-controller's policy-tester. Each admits the digest serve
// attested as soaked in staging, and refuses a digest never proven, the
// policy asking for another environment, a digest whose staging soak is
// not over (attested "proven" only), and the policy with another key.
// The real cosign CLI reads both formats serve writes. admits runs a
// documented policy, with serve's key, on image.
func (r *releaseRig) verifiers(t *testing.T, keys, password, ref, never string, cosignRun func(...string) (string, error)) (admits func(kind, env, image string) (bool, string)) {
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "attestations.md"))
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(keys, "cosign.pub")
	for _, bundle := range []string{"true", "false"} {
		if out, err := cosignRun("verify-attestation", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--new-bundle-format="+bundle, "--type", proven.PredicateType, ref); err != nil {
			t.Errorf("cosign verify-attestation --new-bundle-format=%s: %v\n%s", bundle, err, out)
		}
	}

	// A digest proven in staging whose soak is not over: its one
	// attestation says "proven", as serve's first one does.
	_, young := r.image("app", "young")
	key, err := sign.LoadKey(filepath.Join(keys, "cosign.key"), []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	p := proven.Predicate{Environment: "staging", Repository: "acme/manifests", Image: r.app, Digest: young, Stage: proven.StageProven,
		ProvenSince: time.Now(), Soak: proven.Duration(6 * time.Second), Rules: proven.Rules}
	p.Remember() // its record: staging, proven
	t.Setenv("DOCKER_CONFIG", r.docker)
	if _, err = attest.Write(context.Background(), key, p, attest.FormatBoth, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		t.Fatal(err)
	}

	r.summary(t, ref, pub, cosignRun)

	cases := []struct {
		name, image, env, key string
		admit                 bool
	}{
		{"soaked in staging", ref, "staging", "cosign.pub", true},
		{"never proven", r.app + "@" + never, "staging", "cosign.pub", false},
		{"another environment", ref, "qa", "cosign.pub", false},
		{"the soak not over", r.app + "@" + young, "staging", "cosign.pub", false},
		{"another key", ref, "staging", "other.pub", false},
	}
	glob := strings.TrimSuffix(r.app, "/"+filepath.Base(r.app))
	kyverno := func(policy, image string) (string, error) {
		pod := r.write("pod.yaml", fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: prod}\nspec:\n  containers:\n    - {name: app, image: %q}\n", image))
		cmd := exec.Command(filepath.Join(bin, "kyverno"), "apply", policy, "--resource", pod, "--registry")
		cmd.Env = append(os.Environ(), "HOME="+keys, "DOCKER_CONFIG="+r.docker)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	verifiers := map[string]func(policy, image string) (string, error){
		"ClusterPolicy":         kyverno,
		"ImageValidatingPolicy": kyverno,
		"ClusterImagePolicy": func(policy, image string) (string, error) {
			cmd := exec.Command(filepath.Join(bin, "policy-tester"), "--policy", policy, "--image", image)
			cmd.Env = append(os.Environ(), "HOME="+keys, "DOCKER_CONFIG="+r.docker, "TUF_ROOT="+filepath.Join(keys, "tuf"))
			out, err := cmd.CombinedOutput()
			return string(out), err
		},
	}
	admitsWith := func(kind, env, keyFile, image string) (bool, string) {
		keyPEM, err := os.ReadFile(filepath.Join(keys, keyFile))
		if err != nil {
			t.Fatal(err)
		}
		policy := r.write(kind+".yaml", policyFor(yamlBlock(t, string(doc), "kind: "+kind), glob, env, string(keyPEM)))
		out, err := verifiers[kind](policy, image)
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("%s: %s", kind, err)
		}
		return err == nil, out
	}
	for _, kind := range []string{"ClusterPolicy", "ImageValidatingPolicy", "ClusterImagePolicy"} {
		for _, tc := range cases {
			if admitted, out := admitsWith(kind, tc.env, tc.key, tc.image); admitted != tc.admit {
				t.Errorf("%s, %s: admitted %t, want %t:\n%s", kind, tc.name, admitted, tc.admit, out)
			}
		}
	}
	return func(kind, env, image string) (bool, string) { return admitsWith(kind, env, "cosign.pub", image) }
}

// yamlBlock is the fenced YAML block of doc that contains marker.
func yamlBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		if strings.Contains(m[1], marker) {
			return m[1]
		}
	}
	t.Fatalf("docs/attestations.md has no YAML block with %q", marker)
	return ""
}

// policyFor is a documented policy with the test's registry for the
// docs' example one, env for staging in the record it asks, and keyPEM
// for the placeholder key.
func policyFor(policy, glob, env, keyPEM string) string {
	policy = strings.ReplaceAll(policy, "gitea.example.com/platform", glob)
	policy = strings.ReplaceAll(policy, "provenIn.staging.", "provenIn."+env+".")
	block := regexp.MustCompile(`(?m)^( *)-----BEGIN PUBLIC KEY-----\n(?:.*\n)*?( *)-----END PUBLIC KEY-----\n`)
	return block.ReplaceAllStringFunc(policy, func(m string) string {
		indent := m[:len(m)-len(strings.TrimLeft(m, " "))]
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(keyPEM), "\n") {
			b.WriteString(indent + line + "\n")
		}
		return b.String()
	})
}

// summary: the SLSA verification summary serve wrote beside staging's
// soak passes the real cosign with the key, names PASSED and pinbot's
// level, and its inputAttestations digest is the proven-running
// attestation attached to the digest.
func (r *releaseRig) summary(t *testing.T, ref, pub string, cosignRun func(...string) (string, error)) {
	out, err := cosignRun("verify-attestation", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", attest.VSAType, ref)
	if err != nil {
		t.Fatalf("cosign verify-attestation --type %s: %v\n%s", attest.VSAType, err, out)
	}
	var vsa attest.VSA
	for _, line := range strings.Split(out, "\n") {
		var env struct{ Payload []byte }
		var st struct{ Predicate attest.VSA }
		if json.Unmarshal([]byte(line), &env) == nil && json.Unmarshal(env.Payload, &st) == nil && st.Predicate.VerificationResult != "" {
			vsa = st.Predicate
		}
	}
	subject, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Referrers(subject, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	input := ""
	for _, m := range im.Manifests {
		if m.Annotations["dev.sigstore.bundle.predicateType"] == proven.PredicateType {
			input = strings.TrimPrefix(m.Digest.String(), "sha256:")
		}
	}
	if vsa.VerificationResult != "PASSED" || len(vsa.VerifiedLevels) != 1 || vsa.VerifiedLevels[0] != "PINBOT_PROVEN_RUNNING_STAGING_6S" ||
		len(vsa.InputAttestations) != 1 || input == "" || vsa.InputAttestations[0].Digest["sha256"] != input {
		t.Errorf("the summary %+v; want PASSED, PINBOT_PROVEN_RUNNING_STAGING_6S, the input attestation %s:\n%s", vsa, input, out)
	}
}
