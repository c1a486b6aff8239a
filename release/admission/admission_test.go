package admission

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release"
)

const (
	img = "gitea.example/acme/web"
	dA  = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB  = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC  = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	dD  = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	dE  = "sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
)

// TestJudge: prod admits what it pins and what it proved, and what
// staging proved; it refuses a held digest, a tag, and a digest proven
// nowhere. staging, a first environment, admits any digest not held.
func TestJudge(t *testing.T) {
	chain := release.Chain{
		{Name: "staging", Paths: []string{"staging/**"}, Apps: []string{"web-staging"}},
		{Name: "prod", From: "staging", Paths: []string{"prod/**"}, Apps: []string{"web-prod"}},
	}
	l := release.New()
	st := l.Track("staging", img)
	st.Pinned, st.Proven, st.LastProven, st.PrevProven = dC, dC, dC, dB
	pr := l.Track("prod", img)
	pr.Pinned, pr.Proven, pr.LastProven, pr.PrevProven = dB, dB, dB, dA
	l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: dD, Reason: "crash loop", Since: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)})
	for _, tc := range []struct {
		name, env, image string
		rule, inReason   string // "" admits
	}{
		{"what prod pins, with its tag", "prod", img + ":v2@" + dB, "", ""},
		{"what prod proved before", "prod", img + "@" + dA, "", ""},
		{"what staging proves", "prod", img + "@" + dC, "", ""},
		{"an image the chain does not track", "prod", "gitea.example/acme/sidecar@" + dE, "", ""},
		{"held", "prod", img + "@" + dD, RuleHeld, "sha256:dddddddddddd is held there since 2026-12-05T09:00:00Z: crash loop"},
		{"held, copied to another repository", "prod", "gitea.example/mallory/copy@" + dD, RuleHeld, "is held there as"},
		{"held, another spelling of the registry", "prod", "localhost:3000/acme/web@" + dD, RuleHeld, "crash loop"},
		{"a tag", "prod", img + ":v3", RuleNotPinned, "it is not pinned by digest"},
		{"not an image", "prod", "Not An Image", RuleNotPinned, "image reference"},
		{"proven nowhere", "prod", img + "@" + dE, RuleNotProven, "sha256:eeeeeeeeeeee is neither what prod pins (sha256:bbbbbbbbbbbb) nor proven in staging, which prod takes its digests from"},
		{"a first environment", "staging", img + "@" + dE, "", ""},
		{"a first environment, a tag", "staging", img + ":latest", RuleNotPinned, "not pinned by digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Judge(l, chain, tc.env, "app", tc.image)
			switch {
			case tc.rule == "" && r != nil:
				t.Errorf("Judge = %v, want admitted", r)
			case tc.rule != "" && (r == nil || r.Rule != tc.rule || !strings.Contains(r.Reason, tc.inReason)):
				t.Errorf("Judge = %v, want %s with %q", r, tc.rule, tc.inReason)
			}
		})
	}
}
