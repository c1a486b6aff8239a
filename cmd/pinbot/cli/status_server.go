package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
)

// serverStatus reads the apps (or app, when not "") from the JSON API of
// a running pinbot serve at base, as the dashboard's pages do, and
// prints them: -o json and yaml the API's documents, text a line each.
func serverStatus(ctx context.Context, w io.Writer, g *globals, base string, insecure bool, token, app string) error {
	u, err := loopback.CheckURL(base, insecure)
	if err != nil {
		return usageErrorf("flag --server %s: %w (the http(s) URL of pinbot serve; --insecure-server allows plain HTTP)", clip.Quote(redact.URL(base)), err)
	}
	path := strings.TrimSuffix(u.Path, "/") + dashboard.APIPath
	if app != "" {
		path += "/" + url.PathEscape(app)
	}
	u.Path = path
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := loopback.Client(30 * time.Second).Do(req)
	if err != nil {
		return fmt.Errorf("reading %s: %w", u.Redacted(), redact.Error(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("reading %s: %w", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("%s: %s %s", u.Redacted(), resp.Status, strings.TrimSpace(e.Error))
	}
	var apps []dashboard.APIApp
	if app != "" {
		var a dashboard.APIApp
		if err := json.Unmarshal(body, &a); err != nil {
			return fmt.Errorf("%s: %w", u.Redacted(), err)
		}
		apps = []dashboard.APIApp{a}
	} else {
		var list dashboard.APIList
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("%s: %w", u.Redacted(), err)
		}
		apps = list.Apps
	}
	if g.json() {
		if app != "" {
			return json.NewEncoder(w).Encode(apps[0])
		}
		return json.NewEncoder(w).Encode(apps)
	}
	for _, a := range apps {
		line := fmt.Sprintf("%s: %s, %s, %s", a.Name, a.Sync, a.Health, a.Proof)
		if a.HeadCommit != "" {
			line += " at " + commitid.Short(a.HeadCommit)
		}
		if a.Verification != "" {
			line += ": " + a.Verification
		}
		if a.Unavailable != "" {
			line += " (unavailable: " + a.Unavailable + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
