package dashboard

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release"
)

const digestC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

// hotfixSource is the release page on a hotfix day: staging proven on
// v3, pinbot's onward pull request #13 for v3 open and green, and v3.0.1
// forced into prod from the CLI (`pinbot promote --force`, its own pull
// request #14), merged past the gate and proven there.
type hotfixSource struct{ fakeSource }

func (hotfixSource) Ledgers(context.Context) ([]Ledger, error) {
	lg := fixtureLedger()
	at := time.Now() // the page tells time by the clock
	staged, since := at.Add(-40*time.Minute), at.Add(-5*time.Minute)
	l := release.New()
	*l.Track("staging", "platform/web") = *lg.Ledger.Track("staging", "platform/web")
	l.Track("staging", "platform/web").ProvenSince = &staged
	*l.Track("prod", "platform/web") = release.Track{Pinned: digestC, PinnedTag: "v3.0.1", Proven: digestC, ProvenSince: &since,
		LastProven: digestC, LastProvenTag: "v3.0.1", PrevProven: digestA, PrevProvenTag: "v2",
		Merged: &release.Merge{Digest: digestC, At: at.Add(-8 * time.Minute), Proved: true,
			Bypass: "#14 (a forced promotion, opened by ci-bot, merged by olga) merged while pinbot/gate said failure: v3.0.1 is not proven in staging"},
		Proposal: &release.Proposal{PR: 13, Digest: digestB, Tag: "v3", From: "staging", Head: "13c0ffee",
			Gate: &release.PostedGate{State: commitstatus.Success, Description: "proven in staging for 40m"}}}
	l.Events = []release.Event{
		{At: at.Add(-8 * time.Minute), Env: "prod", Image: "platform/web", Reason: release.ReasonGateBypassed, What: "merged sha256:cccccccccccc past pinbot's gate: #14 (a forced promotion, opened by ci-bot, merged by olga) merged while pinbot/gate said failure: v3.0.1 is not proven in staging; its proof lifts no hold and is not attested"},
	}
	lg.Ledger = l
	prod := lg.Apps["web-prod"]
	prod.Verification = &verdict.Verification{Verified: true, Containers: []verdict.ContainerVerdict{
		{Workload: "Deployment/web-prod", Container: "app", Pod: "web-prod-hotfix", GitDigest: digestC, RunningDigest: digestC, Tag: "v3.0.1", Verdict: verdict.Verified, Ready: true}}}
	lg.Apps["web-prod"] = prod
	return []Ledger{lg}, nil
}

// TestForcedHotfixInBrowser: a release forced into prod from the CLI is a
// red stage, "Past the gate", saying who opened the forced pull request
// and who merged it, even though it is proven there; pinbot's onward pull
// request for v3 still says what it promotes and that its gate is green.
// The screenshot is docs/images/release-forced.png.
func TestForcedHotfixInBrowser(t *testing.T) {
	b := browser.Start(t)
	srv := httptest.NewServer(Handler(hotfixSource{}, time.Second))
	t.Cleanup(srv.Close)
	b.Dark(false)
	b.Open(srv.URL+"/releases/platform/manifests", "ol.stages")
	waitLive(t, b)
	b.Save(t.ArtifactDir(), "release-forced.png")
	prod := `document.querySelector('li.stage[data-env="prod"]')`
	for _, c := range [][3]string{
		{"prod's state", prod + `.querySelector(".state").textContent.trim()`, "Past the gate"},
		{"prod is red", prod + `.className`, "stage bad"},
	} {
		if got := b.Eval(c[1]); got != c[2] {
			t.Errorf("%s: %q, want %q", c[0], got, c[2])
		}
	}
	text := b.Eval(prod + `.textContent`)
	for _, want := range []string{"a forced promotion, opened by ci-bot, merged by olga", "v3.0.1", "#13"} {
		if !strings.Contains(text, want) {
			t.Errorf("prod's stage does not say %q:\n%s", want, text)
		}
	}
}
