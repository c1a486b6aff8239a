package dashboard

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/release"
)

// liveSource serves apps and ledgers that a test changes while a page
// shows them.
type liveSource struct {
	mu      sync.Mutex
	apps    []App
	ledgers []Ledger
}

func (s *liveSource) Apps(context.Context) ([]App, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]App(nil), s.apps...), nil
}

func (s *liveSource) App(_ context.Context, name string) (App, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.apps {
		if a.Name == name {
			return a, nil
		}
	}
	return App{}, fmt.Errorf("app %q: %w", name, ErrNoApp)
}

func (s *liveSource) Ledgers(context.Context) ([]Ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ledger(nil), s.ledgers...), nil
}

func (s *liveSource) change(f func(s *liveSource)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// TestDashboardInBrowser loads the pages in a real headless chromium
// under their Content-Security-Policy: the apps grouped by chain, the
// release page of a bad release, an app's Pods; it follows a change
// without a reload, keeps an expanded detail open across it, is
// keyboard navigable and readable in dark and light, and saves
// screenshots into the test's artifact directory (kept with go test
// -artifacts).
func TestDashboardInBrowser(t *testing.T) {
	b := browser.Start(t)
	apps := fixtureApps()
	apps[0].Repo, apps[0].Env, apps[0].Stage = "platform/manifests", "prod", 1
	apps[2].Repo, apps[2].Env, apps[2].Stage = "platform/manifests", "staging", 0
	src := &liveSource{apps: apps, ledgers: []Ledger{fixtureLedger()}}
	srv := httptest.NewServer(Handler(src, time.Second))
	t.Cleanup(srv.Close)
	dir := t.ArtifactDir()
	check := func(page string, cases [][3]string) {
		t.Helper()
		for _, c := range cases {
			if got := b.Eval(c[1]); got != c[2] {
				t.Errorf("%s: %s: %q, want %q", page, c[0], got, c[2])
			}
		}
	}

	b.Dark(false)
	b.Open(srv.URL+"/", "table.apps")
	waitLive(t, b)
	b.Save(dir, "apps.png")
	check("apps", [][3]string{
		{"navigation", `[...document.querySelectorAll("nav a")].map(a => a.textContent).join(",")`, "pinbot,Apps,Releases"},
		{"current section", `document.querySelector('nav a[aria-current="page"]').textContent`, "Apps"},
		{"grouped by chain, in environment order", `[...document.querySelectorAll("section.group")].map(s => s.dataset.repo + ":" + [...s.querySelectorAll("tr.app")].map(r => r.dataset.app).join(" ")).join(",")`, "platform/manifests:api web,:billing"},
		{"chain links its release page", `document.querySelector('section.group h2 a').pathname`, "/releases/platform/manifests"},
		{"mismatching Pods", `[...document.querySelectorAll('tr[data-app="web"] .pod.mismatch')].map(e => e.dataset.pod).join(",")`, "web-2"},
		{"mismatch in red (the stylesheet applies)", `getComputedStyle(document.querySelector('tr[data-app="web"] .pod.mismatch')).color`, "rgb(197, 34, 31)"},
		{"version beside the digest", `document.querySelector('tr[data-app="web"] td.version').textContent.trim().replace(/\s+/g, " ")`, "v2 sha256:aaaaaaaaaaaa"},
		{"Ready count", `document.querySelector('tr[data-app="web"] td.pods .ready').textContent`, "1/2 Ready"},
		{"absolute time on hover", `document.querySelector('tr[data-app="web"] td.changed time').title`, "2026-12-01T11:59:00Z"},
		{"relative time", `String(/ ago$/.test(document.querySelector('tr[data-app="web"] td.changed time').textContent))`, "true"},
		{"no inline style", `String(document.querySelectorAll("[style], style").length)`, "0"},
	})

	// The page follows a change by itself, without a reload.
	b.Eval(`window.pinbotMarker = "kept"; "ok"`)
	src.change(func(s *liveSource) { s.apps[0].Status.Sync = status.Synced })
	poll.Until(t, 5*time.Second, "the apps page showing the new sync state", func() (bool, string) {
		got := b.Eval(`document.querySelector('tr[data-app="web"] td.sync').textContent`)
		return got == "Synced", got
	})
	if got := b.Eval(`String(window.pinbotMarker)`); got != "kept" {
		t.Errorf("the page reloaded to update (marker %q)", got)
	}

	// Keyboard: the first Tab reaches the skip link, the next the
	// navigation.
	b.Do(chromedp.KeyEvent("\t"))
	check("keyboard", [][3]string{{"first Tab", `document.activeElement.textContent`, "Skip to content"}})
	b.Do(chromedp.KeyEvent("\t"))
	check("keyboard", [][3]string{{"second Tab", `document.activeElement.textContent`, "pinbot"}})

	b.Dark(true)
	check("apps, dark", [][3]string{{"dark background", `getComputedStyle(document.body).backgroundColor`, "rgb(23, 24, 26)"}})
	b.Save(dir, "apps-dark.png")
	b.Dark(false)

	// The release page of a bad release.
	b.Open(srv.URL+"/releases/platform/manifests", "ol.stages")
	waitLive(t, b)
	b.Save(dir, "release.png")
	prod := `document.querySelector('li.stage[data-env="prod"]')`
	check("release", [][3]string{
		{"title", `document.title`, "pinbot: platform/manifests"},
		{"stages in chain order", `[...document.querySelectorAll("li.stage")].map(s => s.dataset.env).join(",")`, "staging,prod"},
		{"staging proven", `document.querySelector('li.stage[data-env="staging"] .state').textContent`, "Proven"},
		{"staging's soak done", `(e => e.value + "/" + e.max)(document.querySelector('li.stage[data-env="staging"] progress'))`, "1800/1800"},
		{"prod failing", `String(` + prod + `.classList.contains("bad")) + " " + ` + prod + `.querySelector(".state").textContent`, "true Rollback open"},
		{"prod failing in red", `getComputedStyle(` + prod + `).borderTopColor`, "rgb(197, 34, 31)"},
		{"short reason first", prod + `.querySelector("summary").textContent.slice(0, 37)`, "v3 (sha256:bbbbbbbbbbbb) failed; the "},
		{"detail folded", `String(` + prod + `.querySelector("details").open)`, "false"},
		{"version pinned", prod + `.querySelector("dd.pinned").textContent.trim().replace(/\s+/g, " ")`, "v3 sha256:bbbbbbbbbbbb"},
		{"rollback linked", prod + `.querySelector("dd.rollback a").href`, "http://gitea.test/platform/manifests/pulls/12"},
		{"Pods per cluster, old ones serving", prod + `.querySelector("li.cluster").textContent.trim().replace(/\s+/g, " ")`, "in-cluster: 0/1 Pods Ready, 2 old-revision Pods still serving v2 (sha256:aaaaaaaaaaaa)"},
		{"hold", prod + `.querySelector("li.hold").textContent.slice(0, 24)`, "v3 sha256:bbbbbbbbbbbb s"},
		{"the gate into prod", `document.querySelector("li.gate .waiting").textContent`, "v3 (sha256:bbbbbbbbbbbb) is held here"},
		{"decisions, newest first", `[...document.querySelectorAll("ol.events li")].map(e => e.dataset.reason).join(",")`, "RollbackOpened,Soaked"},
	})
	// The detail expands by keyboard-reachable summary, and stays open
	// across an update.
	b.Do(chromedp.Click(chromedp.CSS(`li.stage[data-env="prod"] summary`)))
	src.change(func(s *liveSource) {
		l := *s.ledgers[0].Ledger
		l.Events = append(append([]release.Event(nil), l.Events...), release.Event{At: now, Env: "prod", Reason: release.ReasonReported, What: "a person looked"})
		s.ledgers[0].Ledger = &l
	})
	poll.Until(t, 5*time.Second, "the release page showing the new decision", func() (bool, string) {
		got := b.Eval(`document.querySelector("ol.events li").dataset.reason`)
		return got == release.ReasonReported, got
	})
	check("release", [][3]string{{"detail still open after the update", `String(` + prod + `.querySelector("details").open)`, "true"}})
	b.Save(dir, "release-detail.png")
	b.Dark(true)
	b.Save(dir, "release-dark.png")
	b.Dark(false)

	// An app's page: its Pods with readiness, revision and node.
	b.Open(srv.URL+"/apps/web", "#pods")
	waitLive(t, b)
	b.Save(dir, "app-web.png")
	check("app", [][3]string{
		{"title", `document.title`, "pinbot: web"},
		{"Pods", `[...document.querySelectorAll("#pods tr.pod")].map(r => [r.dataset.pod, r.querySelector(".ready").textContent, r.querySelector(".revision").textContent, r.querySelector(".node").textContent].join(" ")).join(",")`,
			"web-1 Ready 5 node-a,web-2 not Ready 5 node-b"},
		{"old revisions", `[...document.querySelectorAll("#old-pods tr.pod")].map(r => r.dataset.pod).join(",")`, "web-old-1"},
		{"open pull requests", `[...document.querySelectorAll("#pulls li a")].map(e => e.textContent + " " + e.href).join(",")`, "#7 promote web http://gitea.test/platform/manifests/pulls/7"},
		{"history", `[...document.querySelectorAll("#history tr.entry td:nth-child(4)")].map(e => e.textContent).join(",")`, "Applied"},
	})

	b.Open(srv.URL+"/ledger", "ol.stages")
	check("old ledger address", [][3]string{{"redirected", `location.pathname`, "/releases"}})
	b.Open(srv.URL+"/apps/nope", "body")
	check("unknown app", [][3]string{{"404", `document.body.textContent.trim()`, "no app nope"}})
}

// waitLive waits until the page's script fetched it once: the script
// runs, and the CSP lets it fetch.
func waitLive(t *testing.T, b *browser.Browser) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the page's script running", func() (bool, string) {
		got := b.Eval(`String(document.body.dataset.live)`)
		return got == "ok", got
	})
}

// TestPagesKeepAStrictCSP: every page forbids inline script and style
// and any other origin.
func TestPagesKeepAStrictCSP(t *testing.T) {
	h := Handler(&liveSource{apps: fixtureApps(), ledgers: []Ledger{fixtureLedger()}}, time.Second)
	for _, p := range []string{"/", "/apps/web", "/releases", "/releases/platform/manifests"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", p, rec.Code, rec.Body)
		}
		if got := rec.Header().Get("Content-Security-Policy"); got != csp || strings.Contains(got, "unsafe") {
			t.Errorf("GET %s: CSP %q", p, got)
		}
		body := rec.Body.String()
		for _, bad := range []string{"<style", " style=", "<script>", "http://", "https://"} {
			if strings.Contains(strings.ReplaceAll(body, "http://gitea.test", ""), bad) {
				t.Errorf("GET %s: the page holds %q", p, bad)
			}
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/releases", nil)
	req.Header.Set(LiveHeader, "1")
	h.ServeHTTP(rec, req)
	if b := rec.Body.String(); strings.Contains(b, "<html") || !strings.Contains(b, `class="stages"`) {
		t.Errorf("the live fragment is not <main> alone:\n%s", b)
	}
}

// TestActionsInBrowser: a signed-in operator's release page in chromium
// shows each action as a link styled as one, reachable by the keyboard,
// and who did what and why; the screenshot is docs/images/release-actions.png.
func TestActionsInBrowser(t *testing.T) {
	b := browser.Start(t)
	srv := httptest.NewServer(Handler(actorSource{user: "olga", verbs: []string{"pause", "resume", "rollback", "hold", "release"}}, time.Second))
	t.Cleanup(srv.Close)
	b.Dark(false)
	b.Open(srv.URL+"/releases/platform/manifests", "ol.stages")
	waitLive(t, b)
	b.Save(t.ArtifactDir(), "release-actions.png")
	for _, c := range [][3]string{
		{"the person", `document.querySelector("form.person .user").textContent`, "olga"},
		{"prod's actions", `[...document.querySelectorAll('li.stage[data-env="prod"] a.action')].map(a => a.textContent).join(",")`, "Release hold,Resume promotions"},
		{"styled as an action", `getComputedStyle(document.querySelector("a.action")).borderTopStyle`, "solid"},
		{"who did what", `document.querySelector("ol.audit li").textContent.replace(/^.* ago /, "")`, "alice ChainPaused prod: incident 42"},
	} {
		if got := b.Eval(c[1]); got != c[2] {
			t.Errorf("%s: %q, want %q", c[0], got, c[2])
		}
	}
}
