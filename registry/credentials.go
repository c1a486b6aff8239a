package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"pinbot.dev/pinbot/internal/redact"
)

// WithForgeToken makes token (a Gitea API token) the credentials for the
// forge's own container registry, the host of forgeURL, when the docker
// config has none for it: a Gitea token with the read:package scope reads
// private packages. Where the registry refuses the token (one without
// that scope), public packages are read anonymously. The token is
// registered with redact.
func WithForgeToken(forgeURL, token string) Option {
	return func(o *options) {
		u, err := url.Parse(forgeURL)
		if err != nil || u.Host == "" || token == "" {
			return
		}
		redact.Register(token)
		o.forgeHost = canonicalHost(u.Host)
		o.forgeAuth = authn.AuthConfig{Username: "pinbot", Password: token}
	}
}

// forgeTokenSource names WithForgeToken's credentials in hints.
const forgeTokenSource = "the forge token"

// credentialSource is one place credentials come from, in the order
// they are tried.
type credentialSource struct {
	name     string
	keychain authn.Keychain
}

// credentials resolves a registry's credentials from its sources in
// order, the first that has some winning, and remembers which source
// answered for each host, for the hint of a 401 or 403.
type credentials struct {
	sources []credentialSource
	used    sync.Map // canonical host -> source name ("" when none had any)
}

// newCredentials is the order of o: WithBasicAuth, then the keychain (the
// docker config by default), then the forge token.
func newCredentials(o options) *credentials {
	c := &credentials{}
	if len(o.basic) > 0 {
		c.sources = append(c.sources, credentialSource{"WithBasicAuth", explicitKeychain(o.basic)})
	}
	c.sources = append(c.sources, credentialSource{keychainName(o.keychain), o.keychain})
	if o.forgeHost != "" {
		c.sources = append(c.sources, credentialSource{forgeTokenSource, explicitKeychain{o.forgeHost: o.forgeAuth}})
	}
	return c
}

// Resolve implements authn.Keychain.
func (c *credentials) Resolve(target authn.Resource) (authn.Authenticator, error) {
	return c.ResolveContext(context.Background(), target)
}

// ResolveContext implements authn.ContextKeychain.
func (c *credentials) ResolveContext(ctx context.Context, target authn.Resource) (authn.Authenticator, error) {
	host := canonicalHost(target.RegistryStr())
	for _, s := range c.sources {
		a, err := authn.Resolve(ctx, s.keychain, target)
		if err != nil {
			return nil, fmt.Errorf("reading credentials for %s from %s: %w", target.RegistryStr(), s.name, err)
		}
		if a != authn.Anonymous {
			c.used.Store(host, s.name)
			return a, nil
		}
	}
	c.used.Store(host, "")
	return authn.Anonymous, nil
}

// forgeTokenRefused says whether err is host refusing the forge token.
func (c *credentials) forgeTokenRefused(host string, err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized && te.StatusCode != http.StatusForbidden {
		return false
	}
	used, _ := c.used.Load(canonicalHost(host))
	return used == forgeTokenSource
}

// hint says, for a registry that answered status, where its credentials
// came from or were looked for.
func (c *credentials) hint(host string, status int) string {
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		return ""
	}
	host = canonicalHost(host)
	if used, ok := c.used.Load(host); ok && used != "" {
		return fmt.Sprintf("pinbot sent credentials for %s from %s, and the registry refused them: check they may read this repository (a Gitea token needs read:package)", host, used)
	}
	var where []string
	for _, s := range c.sources {
		if s.name == forgeTokenSource {
			continue // not for this host, or it would have answered
		}
		where = append(where, s.name)
	}
	return fmt.Sprintf("pinbot sent no credentials for %s: it looks in %s (docker login %s writes them)", host, strings.Join(where, ", then "), host)
}

// keychainName names the keychain k for a hint: the docker config file,
// with its credential helpers, for go-containerregistry's default.
func keychainName(k authn.Keychain) string {
	if k != authn.DefaultKeychain {
		return "the configured keychain"
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".docker")
	}
	return "the docker config " + filepath.Join(dir, "config.json") + " (auths, credHelpers, credsStore)"
}
