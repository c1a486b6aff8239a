package cli

import (
	"context"
	"io"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
)

// serverStatus reads the apps (or app, when not "") from the JSON API of
// a running pinbot serve at base and prints them: -o json and yaml the
// API's documents, text a line each.
func serverStatus(ctx context.Context, w io.Writer, g *globals, base string, insecure bool, token, app string) error {
	u, err := loopback.CheckURL(base, insecure)
	if err != nil {
		return usageErrorf("flag --server %s: %w (the http(s) URL of pinbot serve; --insecure-server allows plain HTTP)", clip.Quote(redact.URL(base)), err)
	}
	apps, err := dashboard.Fetch(ctx, u, token, app)
	if err != nil {
		return err
	}
	return output.ServerApps(w, g.json(), app != "", apps)
}
