package signin

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// Settings is the dashboard section of serve's config file.
//
//	dashboard:
//	  oidc:
//	    issuer: https://sso.example.com/realms/platform
//	    clientID: pinbot
//	    clientSecretFile: /etc/pinbot/oidc/client-secret
//	    redirectURL: https://pinbot.example.com/auth/callback
//	    scopes: [profile, email, groups]
//	    usernameClaim: preferred_username
//	    groupsClaim: groups
//	    sessionKeyFile: /etc/pinbot/oidc/session-key   # the same on every replica
type Settings struct {
	// OIDC signs people in with an OpenID Connect provider; the release
	// page then offers each the actions the cluster's RBAC allows them.
	OIDC *OIDC `yaml:"oidc"`
}

// OIDC is the OpenID Connect sign-in as the config file gives it: files
// relative to the config file's directory.
type OIDC struct {
	// Issuer is the provider's issuer URL, whose discovery document is
	// read at the first sign-in.
	Issuer string `yaml:"issuer"`
	// ClientID is pinbot's client at the provider.
	ClientID string `yaml:"clientID"`
	// ClientSecretFile holds the client's secret; none for a public
	// client.
	ClientSecretFile string `yaml:"clientSecretFile"`
	// RedirectURL is pinbot's callback as the provider knows it, ending
	// in /auth/callback; https makes the cookies Secure.
	RedirectURL string `yaml:"redirectURL"`
	// Scopes are asked besides openid, such as profile, email and groups.
	Scopes []string `yaml:"scopes"`
	// UsernameClaim names the person for RBAC (default
	// preferred_username, then email).
	UsernameClaim string `yaml:"usernameClaim"`
	// GroupsClaim lists their groups (default groups).
	GroupsClaim string `yaml:"groupsClaim"`
	// SessionKeyFile holds the key sessions are signed with: 32 bytes or
	// more, the same on every replica.
	SessionKeyFile string `yaml:"sessionKeyFile"`
}

// Problems lists what is wrong with the section, each naming its key,
// and makes its files absolute against dir.
func (s *Settings) Problems(dir string) []string {
	o := s.OIDC
	if o == nil {
		return nil
	}
	var out []string
	for _, r := range []struct{ key, v string }{{"issuer", o.Issuer}, {"clientID", o.ClientID}, {"redirectURL", o.RedirectURL}, {"sessionKeyFile", o.SessionKeyFile}} {
		if r.v == "" {
			out = append(out, "dashboard.oidc."+r.key+": required")
		}
	}
	for _, u := range []struct{ key, v string }{{"issuer", o.Issuer}, {"redirectURL", o.RedirectURL}} {
		if p, err := url.Parse(u.v); u.v != "" && (err != nil || p.Scheme != "https" && p.Scheme != "http" || p.Host == "") {
			out = append(out, fmt.Sprintf("dashboard.oidc.%s %q: want an http(s) URL", u.key, u.v))
		}
	}
	for _, f := range []*string{&o.ClientSecretFile, &o.SessionKeyFile} {
		if *f != "" && !filepath.IsAbs(*f) {
			*f = filepath.Join(dir, *f)
		}
	}
	return out
}

// Config reads the section's files into the sign-in's Config.
func (o *OIDC) Config() (Config, error) {
	c := Config{Issuer: o.Issuer, ClientID: o.ClientID, RedirectURL: o.RedirectURL, Scopes: o.Scopes, UsernameClaim: o.UsernameClaim, GroupsClaim: o.GroupsClaim}
	key, err := os.ReadFile(o.SessionKeyFile)
	if err != nil {
		return c, fmt.Errorf("dashboard.oidc.sessionKeyFile: %w", err)
	}
	c.SessionKey = bytes.TrimSpace(key)
	if o.ClientSecretFile != "" {
		secret, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			return c, fmt.Errorf("dashboard.oidc.clientSecretFile: %w", err)
		}
		c.ClientSecret = string(bytes.TrimSpace(secret))
	}
	return c, nil
}
