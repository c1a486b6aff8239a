package flags

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
)

// Forge are the flags promote and drift share: the manifest repository
// on its Gitea, and how to reach the registry.
type Forge struct {
	forgeURL  string
	repo      string
	base      string
	tokenFile string
	caFile    string
	plainOK   bool
	insecure  []string
	platform  string
	kindOK    bool
	anyVar    bool
	dryRun    bool
	cacheDir  string
	cacheFlag *pflag.Flag
}

// The environment a CI job sets once for every pinbot step.

func (f *Forge) Bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.forgeURL, "forge-url", os.Getenv(ForgeURLEnv), "Gitea base URL, e.g. https://gitea.example.com (required; default $"+ForgeURLEnv+")")
	fl.StringVar(&f.repo, "repo", os.Getenv(RepoEnv), "manifest repository OWNER/NAME (required; default $"+RepoEnv+")")
	fl.StringVar(&f.base, "base", "", "base branch of the pull requests (default: the repository's default branch)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the Gitea token (default: $"+TokenEnv+")")
	fl.StringVar(&f.caFile, "ca-file", "", "PEM bundle to trust for the forge, the registries and --gate-url, besides the system roots ($SSL_CERT_FILE replaces those)")
	fl.BoolVar(&f.plainOK, "insecure-forge", false,
		"allow a plain-HTTP --forge-url that is not loopback (the token then crosses the network in clear)")
	fl.StringArrayVar(&f.insecure, "insecure-registry", nil,
		"allow plain HTTP to this registry host or host:port (repeatable); loopback is always allowed")
	fl.StringVar(&f.platform, "platform", "",
		"os/arch[/variant] child to pin where a pin's old digest is gone from the registry and an index is promoted (default: keep the index)")
	fl.BoolVar(&f.kindOK, "allow-kind-change", false,
		"let an index pin take a single-platform manifest (or a platform pin another platform), noted in the pull request")
	fl.BoolVar(&f.anyVar, "any-variant", false,
		"promote a digest without a tag into pins of several tag variants (-slim, -alpine, ...), which is refused otherwise")
	fl.BoolVar(&f.dryRun, "dry-run", false, "fetch and resolve, print the diff and the pull request body, push nothing")
	fl.StringVar(&f.cacheDir, "cache-dir", "",
		`keep the fetched Git objects here between runs, in a directory of pinbot's own (default $XDG_CACHE_HOME/pinbot; --cache-dir="" fetches into memory each run)`)
	f.cacheFlag = fl.Lookup("cache-dir")
}

// Cache returns the object cache root: --cache-dir when given (maybe ""),
// else the user cache dir's pinbot, else none.
func (f *Forge) Cache() string {
	if f.cacheFlag != nil && f.cacheFlag.Changed {
		return f.cacheDir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pinbot")
}

// Validate checks the flags; its errors are usage errors.
func (f *Forge) Validate() error {
	u, err := url.Parse(f.forgeURL)
	switch {
	case f.forgeURL == "":
		return Usagef("flag --forge-url: required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return Usagef("flag --forge-url %s: want http(s)://host[:port][/path]", clip.Quote(redact.URL(f.forgeURL)))
	case u.User != nil:
		return Usagef("flag --forge-url: put no credentials in the URL; use --token-file or $%s", TokenEnv)
	case loopback.Cleartext(u) && !f.plainOK:
		return Usagef("flag --forge-url %s: plain HTTP to a host that is not loopback would send the token in clear; use https, or pass --insecure-forge to allow it", redact.URL(f.forgeURL))
	case f.repo == "":
		return Usagef("flag --repo: required (OWNER/NAME)")
	}
	if _, err := gitforge.ParseRepo(f.repo); err != nil {
		return Usagef("flag --repo: %w", err)
	}
	if f.platform != "" {
		if _, err := imageref.ParsePlatform(f.platform); err != nil {
			return Usagef("flag --platform: %w", err)
		}
	}
	return CheckInsecureRegistries(f.insecure)
}

// CheckInsecureRegistries checks the hosts of --insecure-registry.
func CheckInsecureRegistries(hosts []string) error {
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return Usagef("flag --insecure-registry: want a registry host such as registry.internal:5000, got %s", clip.Quote(h))
		}
	}
	return nil
}

// token reads the Gitea token: --token-file, else $PINBOT_GITEA_TOKEN
// (credential); a dry run needs none.
func (f *Forge) token() (string, error) {
	tok, err := Credential("--token-file", f.tokenFile, TokenEnv)
	if err == nil && tok == "" && !f.dryRun {
		return "", Usagef("no Gitea token: pass --token-file FILE or set $%s", TokenEnv)
	}
	return tok, err
}

// Env resolves the flags and the environment into a promote.Env. Registry
// credentials come from the docker config ($DOCKER_CONFIG/config.json or
// ~/.docker/config.json). It warns, through ctx's logger, when
// --insecure-forge lets the token go in clear.
func (f *Forge) Env(ctx context.Context) (promote.Env, error) {
	if err := f.Validate(); err != nil {
		return promote.Env{}, err
	}
	if u, _ := url.Parse(f.forgeURL); loopback.Cleartext(u) {
		logctx.From(ctx).Warn("--insecure-forge: the Gitea token goes over plain HTTP, readable on the network", "forge", redact.URL(f.forgeURL))
	}
	tok, err := f.token()
	if err != nil {
		return promote.Env{}, err
	}
	repo, _ := gitforge.ParseRepo(f.repo)
	opts := []gitforge.GiteaOption{gitforge.WithTokenSource("$" + TokenEnv)}
	if f.tokenFile != "" {
		opts[0] = gitforge.WithTokenSource("--token-file " + f.tokenFile)
	}
	if f.caFile != "" {
		opts = append(opts, gitforge.WithCAFile(f.caFile))
	}
	forge, err := gitforge.NewGitea(f.forgeURL, tok, opts...)
	if err != nil {
		return promote.Env{}, err
	}
	reg, err := registry.New(registry.WithInsecure(f.insecure...), registry.WithCAFile(f.caFile), registry.WithForgeToken(f.forgeURL, tok))
	if err != nil {
		return promote.Env{}, Usagef("--insecure-registry: %w", err)
	}
	return promote.Env{
		Forge:    forge,
		Registry: reg,
		Repo:     repo,
		CloneURL: forge.CloneURL(repo),
		Auth:     gitforge.Auth{Token: tok, CAFile: f.caFile},
		Base:     f.base,
		CacheDir: f.Cache(),
	}, nil
}

// Publish are what promote and drift share: the manifest
// repository on its forge, the gate before an environment and the
// signature policy.
type Publish struct {
	Forge  Forge
	Gate   Gate
	Policy Policy
}

func (f *Publish) Bind(cmd *cobra.Command) {
	f.Forge.Bind(cmd)
	f.Gate.Bind(cmd)
	f.Policy.Bind(cmd)
}

// Open resolves the flags: the promote.Env, the gate (nil for none) and
// the signature policy.
func (f *Publish) Open(ctx context.Context) (promote.Env, promote.Admitter, *trust.Verifier, error) {
	env, err := f.Forge.Env(ctx)
	if err != nil {
		return env, nil, nil, err
	}
	gate, err := f.Gate.Admitter(env.Repo.String(), f.Forge.caFile)
	if err != nil {
		return env, nil, nil, err
	}
	floor, err := f.Policy.Verifier()
	return env, gate, floor, err
}

// Choose returns the digest choice options.
func (f *Forge) Choose() promote.ChooseOptions {
	o := promote.ChooseOptions{AllowKindChange: f.kindOK, AnyVariant: f.anyVar}
	if f.platform != "" {
		o.Platform, _ = imageref.ParsePlatform(f.platform)
	}
	return o
}

// DryRun reports whether --dry-run was given: resolve and print, push
// nothing.
func (f *Forge) DryRun() bool { return f.dryRun }
