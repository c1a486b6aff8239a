package actions_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
)

// TestSignInInChromium: a real headless chromium signs olga in through
// the provider's own login page, from a page of pinbot's that sent her
// there: the session cookie (SameSite=Strict) survives the provider's
// redirect back, she lands on the page she asked for, and the
// confirmation's form posts under its Content-Security-Policy and pauses
// prod in her name.
func TestSignInInChromium(t *testing.T) {
	r := newRig(t)
	b := browser.Start(t)
	b.Do(chromedp.Navigate(r.url + "/?from=chromium"))
	b.Do(chromedp.WaitVisible(chromedp.CSS(`#username`)))
	b.Do(chromedp.SendKeys(chromedp.CSS(`#username`), "olga"), chromedp.SendKeys(chromedp.CSS(`#password`), "olga-pw"),
		chromedp.Submit(chromedp.CSS(`#username`)))
	poll.Until(t, 20*time.Second, "back on pinbot's page, signed in", func() (bool, string) {
		got := b.Eval(`location.pathname + location.search + " " + (document.body ? document.body.textContent : "")`) // null while a page loads
		return strings.HasPrefix(got, "/?from=chromium page for olga, may [pause resume promote rollback hold release force]"), got
	})

	b.Open(r.url+"/actions/pause?"+url.Values{"repo": {repo}, "env": {"prod"}}.Encode(), `input[name="reason"]`)
	b.Save(t.ArtifactDir(), "confirm-pause.png")
	b.Do(chromedp.SendKeys(chromedp.CSS(`input[name="reason"]`), "incident 43: checkout errors"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	poll.Until(t, 20*time.Second, "prod paused in olga's name", func() (bool, string) {
		l := r.ledger()
		p, ok := l.Paused["prod"]
		return ok && p.By == "olga" && p.Why == "incident 43: checkout errors" && len(l.Audit) == 1 && l.Audit[0].Reason == release.ReasonChainPaused, b.Eval(`location.href`)
	})
}
