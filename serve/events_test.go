package serve

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/config"
)

func TestEventType(t *testing.T) {
	pkg := []byte(`{"action":"created","package":{"name":"web"}}`)
	for _, tc := range []struct {
		name, eventType, event string
		body                   []byte
		want                   string
	}{
		{"type header wins", "package", "push", pkg, EventPackage},
		{"old header", "", "pull_request", nil, EventPullRequest},
		{"old Gitea package event with empty headers", "", "", pkg, EventPackage},
		{"no headers, push body", "", "", []byte(`{"ref":"refs/heads/main"}`), EventPush},
		{"null package is a push", "", "", []byte(`{"ref":"x","package":null}`), EventPush},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EventType(tc.eventType, tc.event, tc.body); got != tc.want {
				t.Errorf("EventType = %q, want %q", got, tc.want)
			}
		})
	}
}

func packageBody(version string) string {
	return `{"action":"created","package":{"type":"container","name":"web","version":"` + version +
		`","html_url":"http://Gitea:3000/platform/-/packages/container/web/` + version + `","owner":{"login":"platform"}}}`
}

func TestPackageImage(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		image, tag string
		ok         bool
	}{
		{"tag", packageBody("v1.2.3"), "gitea:3000/platform/web", "v1.2.3", true},
		{"untagged digest of a multi-arch push", packageBody("sha256:" + strings.Repeat("a", 64)), "", "", false},
		{"other type", strings.Replace(packageBody("v1"), `"container"`, `"npm"`, 1), "", "", false},
		{"deleted", strings.Replace(packageBody("v1"), `"created"`, `"deleted"`, 1), "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePackage([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			image, tag, ok := p.Image()
			if diff := cmp.Diff([]any{tc.image, tc.tag, tc.ok}, []any{image, tag, ok}); diff != "" {
				t.Errorf("Image (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ParsePackage([]byte(`{"package":{}}`)); err == nil || !strings.Contains(err.Error(), "no package.name") {
		t.Errorf("ParsePackage of an empty package: error %v, want one naming package.name", err)
	}
}

func TestPromoteTargets(t *testing.T) {
	targets := []Target{
		{Repo: "platform/manifests", Images: []string{"gitea:3000/platform/web", "gitea:3000/platform/api"}},
		{Repo: "platform/drift-only", Drift: "@hourly"},
		{Repo: "team/other", Images: []string{"Gitea:3000/platform/web"}},
	}
	var got []string
	cfg := &Config{Promote: targets}
	for _, tg := range cfg.Targets("gitea:3000/platform/web") {
		got = append(got, tg.Repo)
	}
	if diff := cmp.Diff([]string{"platform/manifests", "team/other"}, got); diff != "" {
		t.Errorf("Targets (-want +got):\n%s", diff)
	}
	if got := cfg.Targets("gitea:3000/platform/db"); len(got) != 0 {
		t.Errorf("Targets of an unlisted image = %v, want none", got)
	}
}

func TestDeliveriesBounded(t *testing.T) {
	d := newDeliveries(4)
	var got []bool
	for i, id := range []string{"a", "a", "b", "c", "a"} {
		got = append(got, d.first(id, []byte{byte(i)}))
	}
	// a is forgotten once b, c and the bodies fill the cache.
	want := []bool{true, false, true, true, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first (-want +got):\n%s", diff)
	}
}

// TestDeliveriesReplayed: a signed body sent again, with no delivery ID or
// a fresh one, is a replay within ReplayWindow and new after it.
func TestDeliveriesReplayed(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	d := newDeliveries(maxDeliveries)
	d.now = func() time.Time { return now }
	body := []byte(`{"action":"created","package":{"version":"v2"}}`)
	var got []bool
	for _, id := range []string{"", "", "fresh-1", "fresh-2"} {
		got = append(got, d.first(id, body))
	}
	if diff := cmp.Diff([]bool{true, false, false, false}, got); diff != "" {
		t.Errorf("replays (-want +got):\n%s", diff)
	}
	if !d.first("", []byte(`{"action":"created","package":{"version":"v3"}}`)) {
		t.Error("another body is a replay")
	}
	now = now.Add(ReplayWindow)
	if !d.first("", body) {
		t.Error("the body after the replay window is still a replay")
	}
}

func TestWebhookHandlerRoutes(t *testing.T) {
	const secret = "webhook-s3cret"
	h, rc := testWebhook(t, secret, []Target{{Repo: "platform/manifests", Images: []string{"gitea:3000/platform/web"}}},
		config.App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"})
	srv := httptest.NewServer(h)
	defer srv.Close()
	pr := func(action string, merged bool) string {
		m := "false"
		if merged {
			m = "true"
		}
		return `{"action":"` + action + `","number":7,"pull_request":{"number":7,"merged":` + m +
			`,"merge_commit_sha":"abc123","head":{"ref":"pinbot/web"},"base":{"ref":"main"}},` +
			`"repository":{"clone_url":"http://gitea:3000/org/app.git"}}`
	}
	for _, tc := range []struct {
		name, eventType, event, delivery, body string
		wantCode                               int
		wantBody                               string
		wantApps                               []string
	}{
		{name: "merged pull request", eventType: "pull_request", delivery: "d1", body: pr("closed", true),
			wantCode: 202, wantBody: `"triggered":["web"]`, wantApps: []string{"web"}},
		{name: "same delivery again", eventType: "pull_request", delivery: "d1", body: pr("closed", true),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "closed unmerged", eventType: "pull_request", delivery: "d2", body: pr("closed", false),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "opened", eventType: "pull_request", delivery: "d3", body: pr("opened", false),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "untagged digest first", eventType: "package", delivery: "p1", body: packageBody("sha256:" + strings.Repeat("b", 64)),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "tag promotes", eventType: "package", delivery: "p2", body: packageBody("v1.2.3"),
			wantCode: 202, wantBody: `"promoting":["platform/manifests"]`},
		{name: "old Gitea: empty X-Gitea-Event", event: "", delivery: "p3", body: packageBody("v1.2.4"),
			wantCode: 202, wantBody: `"promoting":["platform/manifests"]`},
		{name: "redelivered tag", eventType: "package", delivery: "p2", body: packageBody("v1.2.3"),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "replayed with no delivery", eventType: "package", body: packageBody("v1.2.3"),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "replayed with a fresh delivery", eventType: "package", delivery: "p9", body: packageBody("v1.2.4"),
			wantCode: 200, wantBody: `"triggered":[]`},
		{name: "bad pull_request payload", eventType: "pull_request", body: `{"action":`,
			wantCode: 400, wantBody: "decoding the pull_request payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Gitea-Signature", sign(secret, tc.body))
			req.Header.Set("X-Gitea-Event-Type", tc.eventType)
			req.Header.Set("X-Gitea-Event", tc.event)
			req.Header.Set("X-Gitea-Delivery", tc.delivery)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("answer %d %q, want %d with %q", resp.StatusCode, b, tc.wantCode, tc.wantBody)
			}
			if diff := cmp.Diff(tc.wantApps, rc.triggered()); diff != "" {
				t.Errorf("triggered apps (-want +got):\n%s", diff)
			}
		})
	}
	want := []string{"platform/manifests gitea:3000/platform/web:v1.2.3", "platform/manifests gitea:3000/platform/web:v1.2.4"}
	poll.Until(t, 30*time.Second, "both promotions started", func() (bool, string) {
		return len(rc.promotions()) == len(want), fmt.Sprint(rc.promotions())
	})
	got := rc.promotions()
	if len(got) == 2 && got[0] > got[1] {
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("promotions (-want +got):\n%s", diff)
	}
}
