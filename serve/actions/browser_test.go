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
	"pinbot.dev/pinbot/serve/actions"
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

	// Each action's confirmation says what will happen, in the page's
	// style; its screenshot goes into the test's artifacts, and into
	// $PINBOT_SCREENSHOTS when set (docs/images is made that way).
	const next = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	for _, tc := range []struct {
		verb  string
		query url.Values
		says  string
	}{
		{actions.Rollback, url.Values{"image": {image}}, "Roll " + image + " in prod of " + repo + " back to the digest proven there before"},
		{actions.Hold, url.Values{"image": {image}, "digest": {next}}, "Hold " + image + "@sha256:222222222222 in prod"},
		{actions.Release, url.Values{"image": {image}, "digest": {held}}, "Release the hold on " + image + "@sha256:111111111111 in prod"},
		{actions.Promote, url.Values{"image": {image}}, "Merge pinbot's onward pull request of " + image + " into prod"},
		{actions.Force, url.Values{"image": {image}, "digest": {next}}, "Force " + image + "@sha256:222222222222 into prod of " + repo + " past the gate's proof check"},
		{actions.Resume, nil, "Resume the onward promotions into prod of " + repo},
		{actions.Pause, nil, "Pause the onward promotions into prod of " + repo},
	} {
		q := url.Values{"repo": {repo}, "env": {"prod"}}
		for k, v := range tc.query {
			q[k] = v
		}
		b.Open(r.url+"/actions/"+tc.verb+"?"+q.Encode(), `input[name="reason"]`)
		if got := b.Eval(`document.querySelector("p.what").textContent`); !strings.HasPrefix(got, tc.says) {
			t.Errorf("the %s confirmation says %q; want it to start %q", tc.verb, got, tc.says)
		}
		if got := b.Eval(`getComputedStyle(document.querySelector("main")).maxWidth`); got == "none" {
			t.Errorf("the %s confirmation is not styled: main's max-width is %s", tc.verb, got)
		}
		b.SaveElement(t.ArtifactDir(), "confirm-"+tc.verb+".png", "main.confirm")
	}
	b.Do(chromedp.SendKeys(chromedp.CSS(`input[name="reason"]`), "incident 43: checkout errors"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	poll.Until(t, 20*time.Second, "prod paused in olga's name", func() (bool, string) {
		l := r.ledger()
		p, ok := l.Paused["prod"]
		return ok && p.By == "olga" && p.Why == "incident 43: checkout errors" && len(l.Audit) == 1 && l.Audit[0].Reason == release.ReasonChainPaused, b.Eval(`location.href`)
	})
}
