package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/trust/proven"
)

// TestReleaseAttestsProofs: serve, given a key cosign generated, signs a
// "proven running" attestation when staging proves v1 and when its soak
// completes, and attaches it to the image in Gitea's registry. The real
// cosign verifies it with the public key; pinbot attest verify passes
// for staging and its soak, and fails for another environment, a longer
// soak, another key and a digest never proven, from the registry alone.
// A second installation, whose dr comes from the first's staging with
// requireAttestation, takes only what the first attested (see
// secondInstallation).
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
		{"another environment", []string{ref, "--env", "qa", "--key", pub}, 1, ", not qa"},
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
	admits := r.verifiers(t, keys, password, ref, never, cosignRun)
	r.secondInstallation(t, filepath.Join(keys, "cosign.pub"), never)
	r.crowded(t, keys, password, ref, cosignRun, admits)
}

// secondInstallation: another pinbot serve, with its own repository,
// ledger and Lease (its state namespace is prod), whose environment dr comes from
// the first installation's staging, not declared in its chain, with
// requireAttestation and the first's public key. Its gate answers for
// staging from the attestations alone; pinbot promote through it is
// refused for a digest staging never attested, and admitted for the one
// it attested as soaked; and the pinbot/gate it posts on a forced pull
// request of the unattested digest fails, saying why.
func (r *releaseRig) secondInstallation(t *testing.T, pub, never string) {
	key, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	_, v0 := r.image("app", "v0")
	dr := strings.NewReplacer("name: web", "name: web-dr", "app: web", "app: web-dr").Replace(webDeployment("prod", 1, r.app+":v0@"+v0))
	r.createRepo("dr-manifests", map[string]string{
		".pinbot.yaml": `environments:
  - name: dr
    from: staging            # the first installation's
    requireAttestation: true
    attestationKeys: [keys/staging.pub]
    upstreamSoak: 6s
    paths: ["envs/dr/**"]
    apps: [web-dr]
`,
		"keys/staging.pub": string(key),
		"envs/dr/web.yaml": dr,
	})
	g := r.peers.Gitea
	cfg := r.write("pinbot-dr.yaml", fmt.Sprintf(`interval: 2s
stateNamespace: prod       # its own ledger and Lease
forge: {url: %q}
apps:
  - {name: web-dr, repo: %s, branch: main, path: envs/dr, namespace: prod, allowNamespaces: [prod], syncPolicy: {automated: true}}
promote:
  - {repo: %s/dr-manifests, images: [%s]}
`, g.URL, g.RepoURL(g.AdminUser, "dr-manifests"), g.AdminUser, r.app))
	second := r.serveReleases("dr", "--config", cfg)
	gate := []string{"--gate-url", "http://" + second.addr, "--gate-token-file", r.gateFile}

	// The gate answers for the first installation's staging from the
	// attestations alone: what a Kargo http step would ask.
	poll.Until(t, time.Minute, "the second gate answers for staging", func() (bool, string) {
		if _, err := http.Get("http://" + second.addr + "/healthz"); err != nil {
			return false, err.Error() // not listening yet
		}
		code, a := r.ask(second, r.gateToken, proofapi.Query{Env: "staging", Image: r.app, Digest: r.v1})
		return code == 200 && a.Verified && a.Attestation != nil && a.Attestation.ProvenFor >= 6*time.Second, fmt.Sprintf("HTTP %d: %+v\n%s", code, a, second.log.String())
	})
	if code, a := r.ask(second, r.gateToken, proofapi.Query{Env: "staging", Image: r.app, Digest: never}); code != 200 || a.Verified ||
		!strings.Contains(a.Why, "no "+proven.PredicateType+" attestation is attached") {
		t.Errorf("the second gate, of a digest never attested: HTTP %d: %+v", code, a)
	}

	promoteDR := func(digest string, more ...string) (int, string) {
		args := append([]string{"promote", "--env", "dr", "--image", r.app, "--digest", digest, "-o", "json"}, append(gate, more...)...)
		cmd := exec.Command(pinbotBin, append(args, "--forge-url", g.URL, "--repo", g.AdminUser+"/dr-manifests")...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+r.docker, "PINBOT_GITEA_TOKEN="+g.Token, "XDG_CACHE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !asExit(err, &ee) {
			t.Fatal(err)
		}
		if ee != nil {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	if code, out := promoteDR(never); code == 0 || !strings.Contains(out, "carries no attestation that it was proven in staging, which dr requires") {
		t.Errorf("promote into dr of a digest staging never attested: exit %d:\n%s", code, out)
	}
	code, out := promoteDR(r.v1)
	if code != 0 || !strings.Contains(out, `"prNumber"`) {
		t.Fatalf("promote into dr of the digest staging attested: exit %d:\n%s", code, out)
	}

	// Forced, the pull request now pins the unattested digest: the
	// second installation's gate fails it, naming the missing
	// attestation.
	code, out = promoteDR(never, "--force", "--reason", "testing the gate")
	if code != 0 {
		t.Fatalf("forced promote into dr: exit %d:\n%s", code, out)
	}
	c, err := g.Client(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "the second installation's gate on the forced pull request", func() (bool, string) {
		pulls, _, err := c.ListRepoPullRequests(g.AdminUser, "dr-manifests", sdk.ListPullRequestsOptions{State: sdk.StateOpen})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, p := range pulls {
			cs, _, err := c.GetCombinedStatus(g.AdminUser, "dr-manifests", p.Head.Sha)
			if err != nil {
				continue
			}
			for _, s := range cs.Statuses {
				if s.Context != "pinbot/gate" {
					continue
				}
				seen = append(seen, fmt.Sprintf("#%d %s: %s", p.Index, s.State, s.Description))
				if s.State == sdk.StatusFailure && strings.Contains(s.Description, "carries no attestation that it was proven in staging") {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%s\n%s", strings.Join(seen, "\n"), out)
	})
}
