package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/trusttest"
)

func init() { register("signatures", benchSignatures) }

// signatureRuns is how many promotions of each kind are timed, after one
// that warms the cache.
const signatureRuns = 9

// benchSignatures times the same warm promotion twice over, on Gitea and
// its registry: into a repository without a signature policy, and into one
// whose policy wants a keyless signature and a SLSA provenance attestation
// (cosign v3 bundles in the referrers tag schema, Gitea having no
// Referrers API). Runs alternate, each promoting a new digest, so the
// difference of the medians is what verifying one image adds.
func benchSignatures(ctx context.Context, r *report) error {
	fmt.Println("   starting Gitea")
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return fmt.Errorf("starting Gitea: %w", err)
	}
	defer srv.Stop()
	tmp, err := os.MkdirTemp("", "pinbot-bench-signatures-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// trusttest signs for tests; testing.Benchmark lends it a testing.B
	// outside go test. The measurement runs once: it takes longer than
	// the benchmark time, so the harness asks for no second round.
	var plain, signed, checks []time.Duration
	var runErr error
	failed := true
	testing.Benchmark(func(b *testing.B) {
		if plain != nil || runErr != nil {
			return
		}
		plain, signed, checks, runErr = signatureRounds(ctx, b, srv, tmp)
		failed = b.Failed()
	})
	switch {
	case runErr != nil:
		return runErr
	case failed || len(plain) == 0:
		return errors.New("setting up the signed images failed")
	}
	p, s := promoteMedian(plain), promoteMedian(signed)
	added := s - p
	r.info("warm promotion, no signature policy (p50)", fmt.Sprintf("%v over %d runs", promoteRound(p), len(plain)))
	r.info("warm promotion, keyless signature + provenance (p50)", fmt.Sprintf("%v over %d runs", promoteRound(s), len(signed)))
	r.info("trust.Check alone, first sight of a digest (p50)", promoteRound(promoteMedian(checks)).String())
	r.check("signature verification added per image, warm", fmt.Sprintf("%v (%s of the plain run)", promoteRound(added), ratio(s, p)), "≤ 150 ms", added <= 150*time.Millisecond)
	return nil
}

func signatureRounds(ctx context.Context, b *testing.B, srv *gitea.Server, tmp string) (plain, signed, checks []time.Duration, err error) {
	store := trusttest.NewSigstore(b)
	acme := store.Identity("https://ci.acme.example", "jenkins@acme.example")
	auth := remote.WithAuth(&authn.Basic{Username: srv.AdminUser, Password: srv.Token})
	app := srv.RegistryHost + "/" + srv.AdminUser + "/signed-app"
	v1, err := srv.PushRandomImage(app + ":v1")
	if err != nil {
		return nil, nil, nil, err
	}
	pin := map[string]string{"deploy/app.yaml": "image: " + app + "@" + v1 + "\n"}
	policy := fmt.Sprintf(`signatures:
  - images: [%q]
    trustedRoot: keys/trusted_root.json
    keyless:
      - {issuer: https://ci.acme.example, subjectRegExp: '.*@acme\.example'}
    attestations:
      - predicateType: %s
        sourceRepository: 'https://gitea\.acme\.example/acme/app'
`, app, trusttest.SLSAProvenance)
	withPolicy := map[string]string{".pinbot.yaml": policy, "keys/trusted_root.json": string(store.TrustedRoot(b)), "deploy/app.yaml": pin["deploy/app.yaml"]}
	reg, err := registry.New(registry.WithBasicAuth(srv.RegistryHost, srv.AdminUser, srv.Token))
	if err != nil {
		return nil, nil, nil, err
	}
	envs := map[string]promote.Env{}
	for name, files := range map[string]map[string]string{"plain": pin, "signed": withPolicy} {
		dir := filepath.Join(tmp, name)
		for f, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				return nil, nil, nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
				return nil, nil, nil, err
			}
		}
		if _, err := srv.CreateRepoFromDir(ctx, srv.AdminUser, name, "main", dir); err != nil {
			return nil, nil, nil, err
		}
		forge, err := gitforge.NewGitea(srv.URL, srv.Token)
		if err != nil {
			return nil, nil, nil, err
		}
		env := promote.NewEnv(forge, reg, gitforge.Repo{Owner: srv.AdminUser, Name: name})
		env.CacheDir = filepath.Join(tmp, "cache-"+name)
		envs[name] = env
	}
	build := trusttest.Build{BuilderID: "https://jenkins.acme.example/job/app/", Repository: "https://gitea.acme.example/acme/app", Ref: "refs/heads/main", Commit: "0123456789abcdef0123456789abcdef01234567"}
	for i := 0; i <= signatureRuns; i++ {
		d, err := srv.PushRandomImage(fmt.Sprintf("%s:v%d", app, i+2))
		if err != nil {
			return nil, nil, nil, err
		}
		trusttest.Sign(b, app+"@"+d, acme, auth)
		trusttest.Attest(b, app+"@"+d, acme, trusttest.SLSAProvenance, trusttest.Provenance(build), auth)
		order := []string{"plain", "signed"}
		if i%2 == 1 {
			order = []string{"signed", "plain"}
		}
		for _, name := range order {
			start := time.Now()
			if _, err := promote.Run(ctx, envs[name], promote.Request{Inputs: []promote.Input{{Image: app, Digest: d, Source: pr.SourceFlag}}}); err != nil {
				return nil, nil, nil, fmt.Errorf("promoting into %s: %w", name, err)
			}
			took := time.Since(start)
			if i == 0 {
				continue // the first fills the caches
			}
			if name == "plain" {
				plain = append(plain, took)
			} else {
				signed = append(signed, took)
			}
		}
		// The check alone, on a Verifier that has not seen the digest.
		cfg, err := promote.ParseConfig(".pinbot.yaml", []byte(policy))
		if err != nil {
			return nil, nil, nil, err
		}
		v, err := trust.Compile(cfg.Signatures, mapFS(withPolicy))
		if err != nil {
			return nil, nil, nil, err
		}
		start := time.Now()
		if _, err := v.Check(ctx, reg, trust.Subject{Image: app, Digest: d}); err != nil {
			return nil, nil, nil, err
		}
		checks = append(checks, time.Since(start))
	}
	return plain, signed, checks, nil
}

// mapFS is files as an fs.FS.
func mapFS(files map[string]string) fstest.MapFS {
	out := fstest.MapFS{}
	for name, body := range files {
		out[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return out
}
