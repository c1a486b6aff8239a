package actions_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/actions"
)

// TestMergeNowFromThePage: olga merges pinbot's onward pull request from
// the page. While its gate is pending she is refused and nothing merges;
// once green, pinbot merges it at the head it judged, with her name and
// reason in the merge and the audit; a head that moved is refused.
func TestMergeNowFromThePage(t *testing.T) {
	r := newRig(t)
	const next = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	propose := func(head string, gate commitstatus.State) {
		t.Helper()
		if err := r.ledgers.Update(t.Context(), repo, func(l *release.Ledger) error {
			l.Proposed("prod", image, release.Proposal{PR: 7, Digest: next, Head: head, From: "staging"})
			l.Posted("prod", image, 7, gate, "proven in staging")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	olga := r.signIn("olga", "olga-pw")
	propose("c0ffee", commitstatus.Pending)
	page, form := olga.ConfirmForm(url.Values{"repo": {repo}, "env": {"prod"}, "image": {image}}, actions.Promote)
	if !strings.Contains(page, "Merge pinbot&#39;s onward pull request of "+image+" into prod of "+repo+" now, at the head pinbot judged") {
		t.Errorf("the confirmation:\n%s", page)
	}
	form.Set("reason", "the release window opens now")
	if code, body := olga.Post("/actions/promote", form, ""); code != http.StatusConflict || !strings.Contains(body, "#7 waits at the gate (pinbot/gate pending: proven in staging)") {
		t.Errorf("merging past a pending gate: %d %s", code, body)
	}
	select {
	case m := <-r.merged:
		t.Fatalf("merged past a pending gate: %s", m)
	default:
	}

	propose("c0ffee", commitstatus.Success)
	if code, body := olga.Post("/actions/promote", form, ""); code != http.StatusSeeOther {
		t.Fatalf("olga's merge: %d %s", code, body)
	}
	if got := <-r.merged; got != repo+" #7 at c0ffee: Merged by pinbot for olga: the release window opens now" {
		t.Errorf("the merge asked for: %s", got)
	}
	if a := r.ledger().Audit; len(a) == 0 || a[len(a)-1].Reason != release.ReasonMerged || a[len(a)-1].By != "olga" ||
		!strings.Contains(a[len(a)-1].What, "olga merged #7 (sha256:222222222222) into prod at the head pinbot judged") {
		t.Errorf("the audit of the merge: %+v", a)
	}

	propose("moved", commitstatus.Success)
	if code, body := olga.Post("/actions/promote", form, ""); code != http.StatusConflict || !strings.Contains(body, "merging #7: its head moved") {
		t.Errorf("merging a moved head: %d %s", code, body)
	}
}
