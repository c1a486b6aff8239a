// Package browser drives Debian's chromium, headless, for the tests of
// pinbot's web pages: it opens pages, evaluates expressions in them,
// switches the color scheme and saves screenshots.
package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Browser is a headless chromium with a fresh profile.
type Browser struct {
	Ctx context.Context
	t   *testing.T
}

// Start starts chromium (apt-get install -y chromium; .ci/run installs
// it), skipped under -short, and stops it at the test's end.
func Start(t *testing.T) *Browser {
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
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return &Browser{Ctx: ctx, t: t}
}

// Dark makes the pages prefer a dark color scheme (dark true) or a
// light one, as the user's system setting would.
func (b *Browser) Dark(dark bool) {
	b.t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	_, err := chromedp.Call(b.Ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	if err != nil {
		b.t.Fatal(err)
	}
}

// Open navigates to url and waits until selector is visible.
func (b *Browser) Open(url, selector string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.Ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("opening %s: %s", url, err)
	}
	if _, err := chromedp.Run(b.Ctx, chromedp.WaitVisible(chromedp.CSS(selector))); err != nil {
		b.t.Fatalf("waiting for %s on %s: %s", selector, url, err)
	}
}

// Eval is the string value of a JavaScript expression in the page.
func (b *Browser) Eval(js string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluating %s: %s", js, err)
	}
	return s
}

// Do runs chromedp actions.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.Ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// Save saves a screenshot of the whole page into dir (the test's
// artifact directory: kept with go test -artifacts), and into
// $PINBOT_SCREENSHOTS when set.
func (b *Browser) Save(dir, name string) string {
	b.t.Helper()
	return b.save(dir, name, chromedp.FullScreenshot(100)) // 100: PNG
}

// SaveElement saves a screenshot of the element sel selects.
func (b *Browser) SaveElement(dir, name, sel string) string {
	b.t.Helper()
	return b.save(dir, name, chromedp.Screenshot(chromedp.CSS(sel)))
}

func (b *Browser) save(dir, name string, shot chromedp.Action[[]byte]) string {
	b.t.Helper()
	png, err := chromedp.Run(b.Ctx, shot)
	if err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
	if docs := os.Getenv(ScreenshotsEnv); docs != "" {
		if err := os.WriteFile(filepath.Join(docs, name), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	return p
}

// ScreenshotsEnv names a directory every screenshot is copied into as
// well, when set: docs/images is made that way.
const ScreenshotsEnv = "PINBOT_SCREENSHOTS"
