package release

import (
	"strings"
	"testing"
	"time"
)

// TestStandingIsWhatThePageShows: one ledger, asked per image and
// environment as the release page asks it: the hold on what prod pins,
// the soak of what staging proves, the upstream digest a person may
// force into prod (none once it is held there), and why prod's open
// rollback was decided.
func TestStandingIsWhatThePageShows(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	const img = "r.example/web"
	chain := Chain{{Name: "staging", Soak: time.Hour}, {Name: "prod", From: "staging"}}
	since := now.Add(-20 * time.Minute)
	l := New()
	l.Envs["staging"] = map[string]*Track{img: {Pinned: d("b"), PinnedTag: "1.1", Proven: d("b"), ProvenSince: &since}}
	l.Envs["prod"] = map[string]*Track{img: {Pinned: d("c"), Proven: d("a"), Rollback: &Proposal{PR: 7, Digest: d("a"), Failed: d("c")}}}
	l.Holds = []Hold{{Env: "prod", Image: img, Digest: d("c"), Reason: "the proof broke: 1 of 3 Pods runs sha256:9"}}

	staging := StandingOf(l, chain, "staging", img, now)
	if !staging.Soaking() || staging.Soaked != 20*time.Minute || staging.Soak != time.Hour || staging.Hold != nil {
		t.Errorf("staging: soaked %s of %s, soaking %v, hold %v; want 20m of 1h, soaking, no hold", staging.Soaked, staging.Soak, staging.Soaking(), staging.Hold)
	}
	prod := StandingOf(l, chain, "prod", img, now)
	if prod.Hold == nil || prod.Forcible != d("b") || prod.ForcibleTag != "1.1" || prod.Soak != 0 {
		t.Errorf("prod: hold %v, forcible %q %q, soak %s; want the hold on c, b (1.1) forcible, no soak", prod.Hold, prod.Forcible, prod.ForcibleTag, prod.Soak)
	}
	if got := prod.RollbackCause(); !strings.Contains(got, "the proof broke") {
		t.Errorf("prod's rollback cause = %q; want the hold's reason", got)
	}
	l.Holds = append(l.Holds, Hold{Env: "prod", Image: img, Digest: d("b"), Reason: "held by olga"})
	if f := StandingOf(l, chain, "prod", img, now).Forcible; f != "" {
		t.Errorf("a digest held in prod is forcible there: %q", f)
	}
	if h := StandingOf(l, nil, "prod", img, now).HoldOn(d("b")); h == nil || h.Reason != "held by olga" {
		t.Errorf("without a chain, the hold on b = %v; want olga's", h)
	}
}
