package release

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
)

// TestPauseHoldsTheOnwardPromotion: while prod is paused, staging's
// proven digest is not proposed, Next says why, the open proposal's gate
// stays pending naming who paused it and why (so auto-merge never merges
// it). Resumed, the gate turns green and auto-merge merges; the ledger's
// events say who did what.
func TestPauseHoldsTheOnwardPromotion(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	c[1].AutoMerge = true
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, w.input(c, t0))
	if !l.PauseBy("prod", "alice", "incident 42", t0) || l.PauseBy("prod", "bob", "again", t0) {
		t.Fatal("PauseBy: want the first pause to stand, the second refused")
	}
	w.proven("staging", dB)
	as := Step(l, w.input(c, t0.Add(time.Minute)))
	if p := find(as, Promote); p != nil {
		t.Errorf("a paused prod got a proposal: %+v", p)
	}
	if m, _ := Next(l, c, "prod", img, t0.Add(time.Minute)); m.State != MovePaused {
		t.Errorf("Next = %s, want paused", m.State)
	}
	// A proposal opened before the pause: its gate waits, unmerged.
	l.Proposed("prod", img, Proposal{PR: 7, Digest: dB, Head: "h1", From: "staging"})
	as = Step(l, w.input(c, t0.Add(2*time.Minute)))
	g := find(as, Gate)
	if g == nil || g.State != commitstatus.Pending || !strings.Contains(g.Description, "paused by alice: incident 42") || find(as, MergePR) != nil {
		t.Errorf("the gate while paused: %+v, merge %+v", g, find(as, MergePR))
	}
	if !l.ResumeBy("prod", "bob", "incident over", t0.Add(3*time.Minute)) || l.ResumeBy("prod", "bob", "twice", t0.Add(3*time.Minute)) {
		t.Fatal("ResumeBy: want one resume")
	}
	as = Step(l, w.input(c, t0.Add(4*time.Minute)))
	if g := find(as, Gate); g == nil || g.State != commitstatus.Success || find(as, MergePR) == nil {
		t.Errorf("resumed: gate %+v, merge %+v; want green and merged", g, find(as, MergePR))
	}
	var said []string
	for _, e := range l.Events {
		if e.Reason == ReasonChainPaused || e.Reason == ReasonChainResumed {
			said = append(said, e.What)
		}
	}
	if len(said) != 2 || !strings.Contains(said[0], "alice paused") || !strings.Contains(said[1], "bob resumed") {
		t.Errorf("events %q", said)
	}
}
