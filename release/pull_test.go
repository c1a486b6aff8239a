package release

import (
	"slices"
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
			state, desc := JudgePull(l, c, base, headOf(tc.head), t0, nil)
			if state != tc.state || !strings.Contains(desc, tc.wantInMsg) {
				t.Errorf("JudgePull = %s: %s; want %s with %q", state, desc, tc.state, tc.wantInMsg)
			}
		})
	}
	// Proven five minutes ago, with a ten-minute soak: pending until it
	// ends, green after.
	soaking := t0.Add(-5 * time.Minute)
	st.ProvenSince = &soaking
	head := headOf(map[string]map[string]string{"staging": {img: dB}, "prod": {img: dB}})
	if state, desc := JudgePull(l, c, base, head, t0, nil); state != commitstatus.Pending || !strings.Contains(desc, "soaks there until 2026-12-02T12:05:00Z") {
		t.Errorf("during the soak: %s: %s; want pending until +5m", state, desc)
	}
	if state, _ := JudgePull(l, c, base, head, t0.Add(5*time.Minute), nil); state != commitstatus.Success {
		t.Errorf("after the soak: %s, want success", state)
	}
}

// headOf is the head that pins exactly pinned, one digest a pin.
func headOf(pinned map[string]map[string]string) PullHead {
	h := PullHead{Pinned: map[string]map[string][]string{}}
	for env, images := range pinned {
		h.Pinned[env] = map[string][]string{}
		for image, d := range images {
			h.Pinned[env][image] = []string{d}
		}
	}
	return h
}

// TestJudgePullInsiders: the pull request shapes a write collaborator
// tried in order to get a held or unproven digest past the gate, each
// judged from a literal head. Before the head was read with the base's
// rules and every pin judged, each of these got pinbot's own green gate.
func TestJudgePullInsiders(t *testing.T) {
	c := chain()
	l := New()
	st := l.Track("staging", img)
	soaked := t0.Add(-time.Hour)
	st.Pinned, st.Proven, st.ProvenSince = dB, dB, &soaked
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dC, Reason: "crash loop", Since: t0, From: "prod"})
	base := map[string]map[string]string{"staging": {img: dB}, "prod": {img: dA}}
	renamed := slices.Clone(c)
	renamed[1].Name = "production"
	moved := slices.Clone(c)
	moved[1].Paths = []string{"elsewhere/**"}
	for _, tc := range []struct {
		name      string
		head      PullHead
		wantInMsg string
	}{
		{"two extra pins outvote the held one", PullHead{Pinned: map[string]map[string][]string{"prod": {img: {dA, dC}}}}, "is held in prod"},
		{"an ignore marker on the pin", PullHead{Loose: map[string][]string{"prod": {`envs/prod/app.yaml: app marked "pinbot: ignore"`}}}, "marked \"pinbot: ignore\""},
		{"prod renamed", PullHead{ChainChange: ChainChange(c, renamed)}, "adds production and removes prod"},
		{"prod's paths moved", PullHead{ChainChange: ChainChange(c, moved)}, "changes the settings of prod"},
		{"prod deleted", PullHead{ChainChange: ChainChange(c, c[:1])}, "removes prod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, desc := JudgePull(l, c, base, tc.head, t0, nil)
			if state != commitstatus.Failure || !strings.Contains(desc, tc.wantInMsg) {
				t.Errorf("JudgePull = %s: %s; want failure with %q", state, desc, tc.wantInMsg)
			}
		})
	}
	if got := ChainChange(c, slices.Clone(c)); got != "" {
		t.Errorf("ChainChange of the same chain = %q, want none", got)
	}
}
