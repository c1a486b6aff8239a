package main

import (
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

// seeBadRelease opens serve's pages in chromium while prod is in a bad
// release: a digest forced into prod whose new Pod never became Ready,
// the old Pod still serving the last proven one, the rollback pull
// request rb open and the bad digest held. The release page shows each
// element, having followed the release there by itself; the screenshots
// go into the test's artifacts, and into $PINBOT_SCREENSHOTS when set
// (docs/images is made that way).
func (r *releaseRig) seeBadRelease(t *testing.T, rep *replica, bad string, rb *sdk.PullRequest) {
	t.Helper()
	b := browser.Start(t)
	base := "http://" + rep.addr
	b.Open(base+"/releases/"+r.peers.Gitea.AdminUser+"/manifests", `li.stage[data-env="prod"]`)
	prod := `document.querySelector('li.stage[data-env="prod"]')`
	text := func(sel string) string {
		return b.Eval(`(e => e ? e.textContent.trim().replace(/\s+/g, " ") : "")(` + prod + `.querySelector("` + sel + `"))`)
	}
	// The page updates itself: it reaches the rollback without a reload.
	poll.Until(t, 30*time.Second, "the release page showing prod's rollback open", func() (bool, string) {
		state := text(".state")
		return state == "Rollback open" && strings.Contains(text("li.cluster"), "old-revision"), state + "; " + text("li.cluster")
	})
	for _, tc := range []struct{ what, got, want string }{
		{"stages in chain order", b.Eval(`[...document.querySelectorAll("li.stage")].map(s => s.dataset.env).join(",")`), "staging,prod"},
		{"failing in red", b.Eval(`String(` + prod + `.classList.contains("bad"))`), "true"},
		{"short reason first", text(".summary"), " failed; the rollback to "},
		{"the failed digest in it", text(".summary"), imageref.Short(bad)},
		{"the rollback linked", b.Eval(prod + `.querySelector("dd.rollback a").pathname`), strings.TrimPrefix(rb.HTMLURL, r.peers.Gitea.URL)},
		{"the bad digest pinned", text("dd.pinned"), imageref.Short(bad)},
		{"the hold", text("li.hold"), imageref.Short(bad)},
		{"the new Pod not Ready", text("li.cluster"), "in-cluster: 0/1 Pods Ready, 1 old-revision Pods still serving"},
		{"the old Pod's version", text("li.cluster"), imageref.Short(r.v1)},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("release page: %s: %q, want %q in it", tc.what, tc.got, tc.want)
		}
	}
	b.Save(t.ArtifactDir(), "release-bad.png")

	// The apps page never calls the new Pod just Verified.
	b.Open(base+"/", `tr[data-app="web-prod"]`)
	if got := b.Eval(`document.querySelector('tr[data-app="web-prod"] td.proof .badge').textContent`); got == "Verified" {
		t.Errorf("the apps page shows web-prod, whose new Pod is not Ready, as %q", got)
	}
	// Its environment, and what holds it back in the chain.
	if got := b.Eval(`document.querySelector('tr[data-app="web-prod"] td.env').textContent`); got != "prod Rollback open Held" {
		t.Errorf("web-prod's environment on the apps page: %q, want prod with its rollback open and the digest held", got)
	}
	b.Save(t.ArtifactDir(), "apps-bad.png")
	b.Open(base+"/apps/web-prod", "#old-pods")
	if got := b.Eval(`String(document.querySelectorAll("#old-pods tr.pod").length)`); got != "1" {
		t.Errorf("web-prod's page lists %s old-revision Pods, want 1", got)
	}
	b.Save(t.ArtifactDir(), "app-bad.png")
}
