package reconciler

import (
	"fmt"
	"net/url"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/tokenfile"
	"pinbot.dev/pinbot/reconciler/config"
)

// gitAuth returns the Git credentials of app: its own auth, or forge's
// when the repo lives on the forge's host (its tokenFile, else token, of
// WithForgeToken, else $PINBOT_GITEA_TOKEN). Token files are read on
// every call, so a rotated token is picked up.
func gitAuth(forge *config.ForgeConfig, token string, app *config.App) (gitforge.Auth, error) {
	if app.Auth != nil {
		tok := ""
		if app.Auth.TokenFile != "" {
			var err error
			if tok, err = tokenfile.Read(app.Auth.TokenFile); err != nil {
				return gitforge.Auth{}, fmt.Errorf("app %s: %w", app.Name, err)
			}
		}
		return gitforge.Auth{Token: tok, CAFile: app.Auth.CAFile}, nil
	}
	f := forge
	if f == nil || !sameHost(f.URL, app.Repo) {
		return gitforge.Auth{}, nil
	}
	tok := token
	if f.TokenFile != "" || tok == "" {
		var err error
		if tok, err = gitforge.ResolveToken(f.TokenFile); err != nil {
			return gitforge.Auth{}, fmt.Errorf("forge: %w", err)
		}
	}
	return gitforge.Auth{Token: tok, CAFile: f.CAFile}, nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}
