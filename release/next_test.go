package release

import (
	"testing"
	"time"
)

// TestNextIsTheChainsRule: what Next says moves into prod is what Step
// proposes, for each state a literal ledger can hold, including the
// hotfix day's: prod rolling back from C to B while staging is proven on
// A, a digest that already ran in prod. The release page said "A is
// next" there, and the chain will never propose it.
func TestNextIsTheChainsRule(t *testing.T) {
	now := t0.Add(time.Hour)
	proven := func(d string) *Track {
		since := now.Add(-time.Hour)
		return &Track{Pinned: d, Proven: d, ProvenSince: &since, LastProven: d, LastProvenAt: now}
	}
	for _, tc := range []struct {
		name string
		prod Track
		hold bool
		want MoveState
	}{
		{"prod pins A", Track{Pinned: dA}, false, MoveIn},
		{"A held in prod", Track{Pinned: dB, LastProven: dB}, true, MoveHeld},
		{"the rollback brings A back", Track{Pinned: dC, Rollback: &Proposal{PR: 9, Digest: dA, Failed: dC}}, false, MoveReturning},
		{"A proposed", Track{Pinned: dB, LastProven: dB, Proposal: &Proposal{PR: 8, Digest: dA, From: "staging"}}, false, MoveProposed},
		{"hotfix day: prod rolls back from C to B", Track{Pinned: dC, LastProven: dB, PrevProven: dA, Rollback: &Proposal{PR: 7, Digest: dB, Failed: dC}}, false, MoveRollingBack},
		{"hotfix day, after: prod back on B, A ran before it", Track{Pinned: dB, LastProven: dB, PrevProven: dA}, false, MoveRanBefore},
		{"C merged a minute ago, not proven yet", Track{Pinned: dC, LastProven: dB, Merged: &Merge{Digest: dC, At: now.Add(-time.Minute)}}, false, MoveSettling},
		{"nothing stops it", Track{Pinned: dB, LastProven: dB, Proven: dB}, false, MoveNext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chain()
			l := New()
			*l.Track("staging", img) = *proven(dA)
			prod := tc.prod
			*l.Track("prod", img) = prod
			if tc.hold {
				l.Holds = []Hold{{Env: "prod", Image: img, Digest: dA, Since: now}}
			}
			m, ok := Next(l, c, "prod", img, now)
			if !ok || m.State != tc.want || m.Digest != dA {
				t.Fatalf("Next = %+v, %v; want %s of A", m, ok, tc.want)
			}
			w := newWorld()
			w.proven("staging", dA)
			w.pinned["prod"] = prod.Pinned
			w.obs["prod"] = Assessment{Image: img, Digest: prod.Pinned, Proven: prod.Proven == prod.Pinned && prod.Pinned != "", Why: "rolling out"}
			if prod.Proven != "" {
				w.proven("prod", prod.Proven)
			}
			p := find(Step(l, w.input(c, now)), Promote)
			if proposes := p != nil && p.Digest == dA && p.Env == "prod"; proposes != (tc.want == MoveNext) {
				t.Errorf("Step proposes A into prod: %v; Next says %s", proposes, m.State)
			}
		})
	}
}
