package release

import (
	"strings"
	"testing"
)

// TestJudgePull: a person's or another bot's pull request is judged pin by
// pin like pinbot's own promotions.
func TestJudgePull(t *testing.T) {
	c := chain()
	l := New()
	st := l.Track("staging", img)
	st.Pinned, st.Proven = dB, dB
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dC, Reason: "crash loop", Since: t0, From: "prod"})
	base := map[string]map[string]string{"staging": {img: dB}, "prod": {img: dA}}
	for _, tc := range []struct {
		name      string
		head      map[string]map[string]string
		state     string
		wantInMsg string
	}{
		{"no pin changed", base, GateSuccess, "changes no pin of the release chain"},
		{"a digest proven in staging into prod", map[string]map[string]string{"staging": {img: dB}, "prod": {img: dB}}, GateSuccess, "admitted (prod: sha256:bbbbbbbbbbbb)"},
		{"an unproven digest into prod", map[string]map[string]string{"staging": {img: dB}, "prod": {img: dD}}, GateFailure, "is not proven in staging"},
		{"a held digest into prod", map[string]map[string]string{"staging": {img: dB}, "prod": {img: dC}}, GateFailure, "is held in prod since"},
		{"a held digest into staging", map[string]map[string]string{"staging": {img: dC}, "prod": {img: dA}}, GateSuccess, "admitted (staging: sha256:cccccccccccc)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, desc := JudgePull(l, c, base, tc.head, t0)
			if state != tc.state || !strings.Contains(desc, tc.wantInMsg) {
				t.Errorf("JudgePull = %s: %s; want %s with %q", state, desc, tc.state, tc.wantInMsg)
			}
		})
	}
}
