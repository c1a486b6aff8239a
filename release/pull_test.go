package release

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
)

// TestJudgePull: a person's or another bot's pull request is judged pin by
// pin like pinbot's own promotions.
func TestJudgePull(t *testing.T) {
	c := chain()
	l := New()
	st := l.Track("staging", img)
	soaked := t0.Add(-time.Hour)
	st.Pinned, st.Proven, st.ProvenSince = dB, dB, &soaked
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dC, Reason: "crash loop", Since: t0, From: "prod"})
	base := map[string]map[string]string{"staging": {img: dB}, "prod": {img: dA}}
	for _, tc := range []struct {
		name      string
		head      map[string]map[string]string
		state     commitstatus.State
		wantInMsg string
	}{
		{"no pin changed", base, commitstatus.Success, "changes no pin of the release chain"},
		{"a digest proven in staging into prod", map[string]map[string]string{"staging": {img: dB}, "prod": {img: dB}}, commitstatus.Success, "admitted (prod: sha256:bbbbbbbbbbbb)"},
		{"an unproven digest into prod", map[string]map[string]string{"staging": {img: dB}, "prod": {img: dD}}, commitstatus.Failure, "is not proven in staging"},
		{"a held digest into prod", map[string]map[string]string{"staging": {img: dB}, "prod": {img: dC}}, commitstatus.Failure, "is held in prod since"},
		{"a held digest into staging", map[string]map[string]string{"staging": {img: dC}, "prod": {img: dA}}, commitstatus.Success, "admitted (staging: sha256:cccccccccccc)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, desc := JudgePull(l, c, base, tc.head, t0, nil)
			if state != tc.state || !strings.Contains(desc, tc.wantInMsg) {
				t.Errorf("JudgePull = %s: %s; want %s with %q", state, desc, tc.state, tc.wantInMsg)
			}
		})
	}
	// Proven five minutes ago, with a ten-minute soak: pending until it
	// ends, green after.
	soaking := t0.Add(-5 * time.Minute)
	st.ProvenSince = &soaking
	head := map[string]map[string]string{"staging": {img: dB}, "prod": {img: dB}}
	if state, desc := JudgePull(l, c, base, head, t0, nil); state != commitstatus.Pending || !strings.Contains(desc, "soaks there until 2026-12-02T12:05:00Z") {
		t.Errorf("during the soak: %s: %s; want pending until +5m", state, desc)
	}
	if state, _ := JudgePull(l, c, base, head, t0.Add(5*time.Minute), nil); state != commitstatus.Success {
		t.Errorf("after the soak: %s, want success", state)
	}
}
