package release

import (
	"strings"
	"testing"
	"time"
)

const dE = "sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"

// TestAdmitPod: prod admits what it pins and what it proved, and what
// staging proved; it refuses a held digest, a tag, and a digest proven
// nowhere. staging, a first environment, admits any digest not held.
func TestAdmitPod(t *testing.T) {
	chain := Chain{
		{Name: "staging", Paths: []string{"staging/**"}, Apps: []string{"web-staging"}},
		{Name: "prod", From: "staging", Paths: []string{"prod/**"}, Apps: []string{"web-prod"}},
	}
	l := New()
	st := l.Track("staging", img)
	st.Pinned, st.Proven, st.LastProven, st.PrevProven = dC, dC, dC, dB
	pr := l.Track("prod", img)
	pr.Pinned, pr.Proven, pr.LastProven, pr.PrevProven = dB, dB, dB, dA
	l.Holds = append(l.Holds, Hold{Env: "prod", Image: img, Digest: dD, Reason: "crash loop", Since: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)})
	for _, tc := range []struct {
		name, env, image string
		rule, inReason   string // "" admits
	}{
		{"what prod pins, with its tag", "prod", img + ":v2@" + dB, "", ""},
		{"what prod proved before", "prod", img + "@" + dA, "", ""},
		{"what staging proves", "prod", img + "@" + dC, "", ""},
		{"an image the chain does not track", "prod", "registry.example/org/sidecar@" + dE, "", ""},
		{"held", "prod", img + "@" + dD, RuleHeld, "sha256:dddddddddddd is held there since 2026-12-05T09:00:00Z: crash loop"},
		{"held, copied to another repository", "prod", "registry.example/mallory/copy@" + dD, RuleHeld, "is held there as"},
		{"held, another spelling of the registry", "prod", "localhost:5000/org/web@" + dD, RuleHeld, "crash loop"},
		{"a tag", "prod", img + ":v3", RuleNotPinned, "it is not pinned by digest"},
		{"not an image", "prod", "Not An Image", RuleNotPinned, "image reference"},
		{"proven nowhere", "prod", img + "@" + dE, RuleNotProven, "sha256:eeeeeeeeeeee is neither what prod pins (sha256:bbbbbbbbbbbb) nor proven in staging, which prod takes its digests from"},
		{"a first environment", "staging", img + "@" + dE, "", ""},
		{"a first environment, a tag", "staging", img + ":latest", RuleNotPinned, "not pinned by digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := AdmitPod(l, chain, tc.env, "app", tc.image)
			switch {
			case tc.rule == "" && r != nil:
				t.Errorf("AdmitPod = %v, want admitted", r)
			case tc.rule != "" && (r == nil || r.Rule != tc.rule || !strings.Contains(r.Detail, tc.inReason) || !strings.HasPrefix(r.Error(), "container app: ")):
				t.Errorf("AdmitPod = %v, want %s with %q", r, tc.rule, tc.inReason)
			}
		})
	}
}
