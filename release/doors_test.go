package release

import (
	"errors"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
)

// TestThreeDoors runs one ledger through the chain's three doors and pins
// where they differ: Admit (a promotion: CI's, drift's, serve's onward
// one), JudgePull (a pull request anyone opened) and AdmitPod (a
// container the cluster is asked to run). The first two move Git and
// share one rule; the third guards what Git already holds, so a soak, a
// freeze, a missing attestation and a stopped chain stop a move but not
// the Pods of what is pinned, and the proofs before the last still run
// (a rollout's old revision, a rollback's target). A hold shuts all
// three.
func TestThreeDoors(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	type door struct {
		admit string             // Admit's rule, "" for admitted
		pull  commitstatus.State // JudgePull's state
		pod   string             // AdmitPod's rule, "" for admitted
	}
	admitted := door{"", commitstatus.Success, ""}
	for _, tc := range []struct {
		name   string
		digest string
		setup  func(l *Ledger, c Chain)
		want   door
	}{
		{"proven upstream and soaked", dC, nil, admitted},
		{"proven upstream, still soaking", dC, func(l *Ledger, _ Chain) { l.Lookup("staging", img).ProvenSince = ptr(now.Add(-10 * time.Minute)) },
			door{RuleSoaking, commitstatus.Pending, ""}},
		{"proven here before, not upstream now", dA, nil, door{RuleNotProven, commitstatus.Failure, ""}},
		{"proven nowhere", dE, nil, door{RuleNotProven, commitstatus.Failure, RuleNotProven}},
		{"frozen", dC, func(l *Ledger, _ Chain) { l.Lookup("prod", img).FrozenUntil = ptr(now.Add(time.Hour)) },
			door{RuleFrozen, commitstatus.Failure, ""}},
		{"the chain stopped", dC, func(l *Ledger, _ Chain) { l.Stopped = "prod's proof broke twice" },
			door{RuleStopped, commitstatus.Failure, ""}},
		{"an attestation required, none read", dC, func(_ *Ledger, c Chain) { c[1].RequireAttestation, c[1].AttestationKeys = true, []string{"k.pub"} },
			door{RuleNotAttested, commitstatus.Failure, ""}},
		{"held", dC, func(l *Ledger, _ Chain) {
			l.Holds = append(l.Holds, Hold{Env: "prod", Image: img, Digest: dC, Reason: "crash loop", Since: now.Add(-time.Hour)})
		}, door{RuleHeld, commitstatus.Failure, RuleHeld}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain := Chain{
				{Name: "staging", Paths: []string{"staging/**"}, Apps: []string{"web-staging"}, Soak: time.Hour},
				{Name: "prod", From: "staging", Paths: []string{"prod/**"}, Apps: []string{"web-prod"}},
			}
			l := New()
			st := l.Track("staging", img)
			st.Pinned, st.Proven, st.ProvenSince, st.LastProven, st.PrevProven = dC, dC, ptr(now.Add(-2*time.Hour)), dC, dB
			pr := l.Track("prod", img)
			pr.Pinned, pr.Proven, pr.ProvenSince, pr.LastProven, pr.PrevProven = dB, dB, ptr(now.Add(-time.Hour)), dB, dA
			if tc.setup != nil {
				tc.setup(l, chain)
			}

			var got door
			a, _ := chain.Admission("prod", img, tc.digest)
			if err := Admit(a, FactsFrom(l, a, now)); err != nil {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("Admit: %v, not a *Refusal", err)
				}
				got.admit = r.Rule
			}
			head := PullHead{Pinned: map[string]map[string][]string{"prod": {img: {tc.digest}}}}
			got.pull, _ = JudgePull(l, chain, map[string]map[string]string{"prod": {img: dB}}, head, now, nil)
			if r := AdmitPod(l, chain, "prod", "app", img+"@"+tc.digest); r != nil {
				got.pod = r.Rule
			}
			if got != tc.want {
				t.Errorf("doors of %s: Admit %q, JudgePull %s, AdmitPod %q; want Admit %q, JudgePull %s, AdmitPod %q",
					tc.digest[:19], got.admit, got.pull, got.pod, tc.want.admit, tc.want.pull, tc.want.pod)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
