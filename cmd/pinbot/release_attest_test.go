package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust/proven"
)

// TestReleaseAttestsProofs: serve, given a key cosign generated, signs a
// "proven running" attestation when staging proves v1 and when its soak
// completes, and attaches it to the image in Gitea's registry. The real
// cosign verifies it with the public key; pinbot attest verify passes
// for staging and its soak, and fails for another environment, a longer
// soak, another key and a digest never proven, from the registry alone.
func TestReleaseAttestsProofs(t *testing.T) {
	ctx := context.Background()
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	cosign := filepath.Join(bin, "cosign")
	if _, err := os.Stat(cosign); err != nil {
		t.Fatalf("the attestation test verifies with the real cosign (make cosign): %s", err)
	}
	r := newReleaseRig(ctx, t, twoEnvs, 1)
	keys := t.TempDir()
	const password = "attest-key-password"
	cosignRun := func(args ...string) (string, error) {
		cmd := exec.Command(cosign, args...)
		cmd.Env = append(os.Environ(), "HOME="+keys, "SIGSTORE_NO_CACHE=true", "TUF_ROOT="+filepath.Join(keys, "tuf"),
			"COSIGN_PASSWORD="+password, "DOCKER_CONFIG="+r.docker)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cosignRun("generate-key-pair", "--output-key-prefix", filepath.Join(keys, "cosign")); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	if out, err := cosignRun("generate-key-pair", "--output-key-prefix", filepath.Join(keys, "other")); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	pwFile := r.write("attest-password", password+"\n")
	cfg, err := os.ReadFile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.cfg = r.write("pinbot.yaml", string(cfg)+"attest: {keyFile: "+filepath.Join(keys, "cosign.key")+", passwordFile: "+pwFile+"}\n")
	rep := r.serveReleases("a")

	r.waitProven("staging", r.v1, 2*time.Minute)
	poll.Until(t, 2*time.Minute, "staging's soak attested", func() (bool, string) {
		for _, e := range r.ledger().Events {
			if e.Env == "staging" && e.Reason == release.ReasonAttested && strings.Contains(e.What, "(soaked,") {
				return true, ""
			}
			if e.Reason == release.ReasonAttestationFailed {
				t.Fatalf("an attestation failed: %s\n%s", e.What, rep.log.String())
			}
		}
		return false, r.ledgerSummary()
	})

	ref := r.app + "@" + r.v1
	pub := filepath.Join(keys, "cosign.pub")
	if out, err := cosignRun("verify-attestation", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", proven.PredicateType, ref); err != nil {
		t.Fatalf("cosign verify-attestation: %v\n%s", err, out)
	} else if !strings.Contains(out, `"environment":"staging"`) && !strings.Contains(out, "Verification for") {
		t.Errorf("cosign verify-attestation printed:\n%s", out)
	}
	if out, err := cosignRun("verify-attestation", "--key", filepath.Join(keys, "other.pub"), "--insecure-ignore-tlog", "--allow-http-registry", "--type", proven.PredicateType, ref); err == nil {
		t.Errorf("cosign verify-attestation passed with another key:\n%s", out)
	}

	_, never := r.image("app", "never-promoted")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"staging, soaked", []string{ref, "--env", "staging", "--min-soak", "6s", "--key", pub}, 0, "proven running in staging since"},
		{"another environment", []string{ref, "--env", "qa", "--key", pub}, 1, "proven in staging, not qa"},
		{"a longer soak", []string{ref, "--env", "staging", "--min-soak", "24h", "--key", pub}, 1, "less than 24h0m0s"},
		{"another key", []string{ref, "--env", "staging", "--key", filepath.Join(keys, "other.pub")}, 1, "other.pub"},
		{"never proven", []string{r.app + "@" + never, "--env", "staging", "--key", pub}, 1, "no " + proven.PredicateType + " attestation is attached"},
	} {
		cmd := exec.Command(pinbotBin, append([]string{"attest", "verify"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+r.docker)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("pinbot attest verify, %s: exit %d, want %d with %q:\n%s", tc.name, code, tc.code, tc.want, out)
		}
	}
}
