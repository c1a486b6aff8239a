package dashboard

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// literalSource serves fixtureApps.
type literalSource []App

func (s literalSource) Apps(context.Context) ([]App, error) { return s, nil }

func (s literalSource) App(_ context.Context, name string) (App, error) {
	for _, a := range s {
		if a.Name == name {
			return a, nil
		}
	}
	return App{}, fmt.Errorf("app %q: %w", name, ErrNoApp)
}

// browser starts Debian's chromium headless (installed by .ci/run) with a
// fresh profile, and returns a chromedp context on it.
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts chromium; skipped under testing.Short (-short)")
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (apt-get install -y chromium; .ci/run does): %s", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// TestDashboardInBrowser loads both pages in a real headless chromium,
// asserts on the DOM and saves screenshots into the test's artifact
// directory (kept with go test -artifacts).
func TestDashboardInBrowser(t *testing.T) {
	ctx := browser(t)
	srv := httptest.NewServer(Handler(literalSource(fixtureApps()), time.Minute))
	t.Cleanup(srv.Close)
	dir := t.ArtifactDir()

	navigate(t, ctx, srv.URL+"/", "#apps")
	save(t, ctx, dir, "apps.png")
	for _, tc := range []struct{ name, js, want string }{
		{"app names", `[...document.querySelectorAll("#apps tr.app a.name")].map(e => e.textContent).join(",")`, "api,billing,web"},
		{"sources", `[...document.querySelectorAll("#apps tr.app td.source")].map(e => e.textContent).join(",")`, "pinbot,argocd,pinbot"},
		{"sync", `[...document.querySelectorAll("#apps tr.app td.sync")].map(e => e.textContent).join(",")`, "Synced,Unknown,OutOfSync"},
		{"mismatching Pods", `[...document.querySelectorAll('tr[data-app="web"] .pod.mismatch')].map(e => e.dataset.pod).join(",")`, "web-2"},
		{"mismatch in red", `getComputedStyle(document.querySelector('tr[data-app="web"] .pod.mismatch')).color`, "rgb(197, 34, 31)"},
		{"matching Pod not red", `getComputedStyle(document.querySelector('tr[data-app="web"] .pod[data-pod="web-1"]')).color`, "rgb(29, 29, 31)"},
		{"Git digest beside Pods", `document.querySelector('tr[data-app="web"] .workload code.git').textContent`, "sha256:aaaaaaaaaaaa"},
		{"commit link", `document.querySelector('tr[data-app="web"] td.commit a').href`, "http://gitea.test/platform/manifests/commit/" + commit1},
		{"meta refresh", `document.querySelector('meta[http-equiv="refresh"]').content`, "60"},
	} {
		if got := eval(t, ctx, tc.js); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(`tr[data-app="web"] a.name`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible(chromedp.CSS("#history"))); err != nil {
		t.Fatal(err)
	}
	save(t, ctx, dir, "app-web.png")
	for _, tc := range []struct{ name, js, want string }{
		{"title", `document.title`, "pinbot: web"},
		{"open pull requests", `[...document.querySelectorAll("#pulls li a")].map(e => e.textContent + " " + e.href).join(",")`,
			"#7 promote web http://gitea.test/platform/manifests/pulls/7"},
		{"history", `[...document.querySelectorAll("#history tr.entry td:nth-child(4)")].map(e => e.textContent).join(",")`, "Applied"},
	} {
		if got := eval(t, ctx, tc.js); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	navigate(t, ctx, srv.URL+"/apps/nope", "body")
	if got := eval(t, ctx, `document.body.textContent.trim()`); got != "no app nope" {
		t.Errorf("unknown app page says %q, want \"no app nope\"", got)
	}
}

func navigate(t *testing.T, ctx context.Context, url, wait string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %s", url, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible(chromedp.CSS(wait))); err != nil {
		t.Fatalf("waiting for %s on %s: %s", wait, url, err)
	}
}

// eval is the string value of a DOM expression in the page.
func eval(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluating %s: %s", js, err)
	}
	return s
}

func save(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG; below, JPEG
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}
