package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
)

// Fetch reads the apps (or the one app, when app is not "") from the
// JSON API of a running pinbot serve at u, as the dashboard's pages do,
// with token as its bearer token when not "".
func Fetch(ctx context.Context, u *url.URL, token, app string) ([]APIApp, error) {
	copied := *u
	u = &copied
	u.Path = strings.TrimSuffix(u.Path, "/") + APIPath
	if app != "" {
		u.Path += "/" + url.PathEscape(app)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := loopback.Client(30 * time.Second).Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u.Redacted(), redact.Error(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("%s: %s %s", u.Redacted(), resp.Status, strings.TrimSpace(e.Error))
	}
	if app != "" {
		var a APIApp
		if err := json.Unmarshal(body, &a); err != nil {
			return nil, fmt.Errorf("%s: %w", u.Redacted(), err)
		}
		return []APIApp{a}, nil
	}
	var list APIList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	return list.Apps, nil
}
