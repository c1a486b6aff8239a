package release

import (
	"testing"
	"time"
)

// withTags is in with the tags each environment's pins carry.
func withTags(in Input, tags map[string]string) Input {
	in.Tags = map[string]map[string]string{}
	for env, tag := range tags {
		in.Tags[env] = map[string]string{img: tag}
	}
	return in
}

// TestHotfixDayTags: the onward promotion carries the tag the upstream
// pins (staging's 1.0.1, not prod's 1.0.0), and a rollback writes the
// restored digest with the tag it had when it was proven, never the failed
// release's.
func TestHotfixDayTags(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, withTags(w.input(c, t0), map[string]string{"prod": "1.0.0", "staging": "1.0.0"}))
	w.proven("staging", dB)
	as := Step(l, withTags(w.input(c, t0.Add(time.Minute)), map[string]string{"prod": "1.0.0", "staging": "1.0.1"}))
	if p := find(as, Promote); p == nil || p.Digest != dB || p.Tag != "1.0.1" {
		t.Fatalf("onward: %+v, want B with staging's tag 1.0.1", p)
	}
	// Prod merges B as 1.0.1, then a forced C as 1.0.3 that fails.
	w.proven("prod", dB)
	Step(l, withTags(w.input(c, t0.Add(2*time.Minute)), map[string]string{"prod": "1.0.1", "staging": "1.0.1"}))
	Step(l, withTags(w.input(c, t0.Add(3*time.Minute)), map[string]string{"prod": "1.0.1", "staging": "1.0.1"}))
	w.pinned["prod"], w.obs["prod"] = dC, Assessment{Image: img, Digest: dC, Failure: "app web-prod is Degraded"}
	as = Step(l, withTags(w.input(c, t0.Add(4*time.Minute)), map[string]string{"prod": "1.0.3", "staging": "1.0.1"}))
	as = append(as, Step(l, withTags(w.input(c, t0.Add(5*time.Minute)), map[string]string{"prod": "1.0.3", "staging": "1.0.1"}))...)
	if rb := find(as, Rollback); rb == nil || rb.Digest != dB || rb.Tag != "1.0.1" {
		t.Errorf("rollback: %+v, want B with the tag it was proven with, 1.0.1", rb)
	}
}

// TestHotfixDay: while a person's forced release is inside its readiness
// window no onward pull request undoes it; when it fails and the rollback
// merges, the ledger shows no stale proposal and the proven upstream
// digest is proposed again.
func TestHotfixDay(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, w.input(c, t0))
	Step(l, w.input(c, t0.Add(time.Minute)))
	// Staging proves B: the onward pull request opens.
	w.proven("staging", dB)
	if p := find(Step(l, w.input(c, t0.Add(2*time.Minute))), Promote); p == nil || p.Digest != dB {
		t.Fatalf("onward: %+v, want B", p)
	}
	l.Proposed("prod", img, Proposal{PR: 7, Digest: dB, Head: "h1", From: "staging"})
	// A person forces the hotfix C into prod over it, through PR 7.
	w.pinned["prod"], w.obs["prod"] = dC, Assessment{Image: img, Digest: dC, Why: "0/2 ready"}
	as := Step(l, w.input(c, t0.Add(3*time.Minute)))
	if p := find(as, Promote); p != nil {
		t.Fatalf("inside the hotfix's readiness window: %+v, want no onward pull request", p)
	}
	if tr := l.Lookup("prod", img); tr.Proposal != nil {
		t.Errorf("the ledger still shows PR %d as open after another digest merged", tr.Proposal.PR)
	}
	// C never gets ready: rolled back to A.
	as = Step(l, w.input(c, t0.Add(6*time.Minute)))
	rb := find(as, Rollback)
	if rb == nil || rb.Digest != dA {
		t.Fatalf("after the deadline: %+v, want the rollback to A", as)
	}
	if p := find(as, Promote); p != nil {
		t.Errorf("an onward pull request beside the rollback: %+v", p)
	}
	l.RollbackOpened("prod", img, Proposal{PR: 8, Digest: dA, Failed: dC})
	// The rollback merges and A proves again: B, proven in staging, is
	// proposed again.
	w.proven("prod", dA)
	Step(l, w.input(c, t0.Add(7*time.Minute)))
	as = Step(l, w.input(c, t0.Add(8*time.Minute)))
	if p := find(as, Promote); p == nil || p.Digest != dB {
		t.Errorf("after the rollback merged: %+v, want B proposed again", as)
	}
}

// TestDecidedRollbackSurvivesALeaderChange: a rollback decided and
// written to the ledger, whose pull request never opened (the leader
// stopped in between), is pending for the next leader, and is not once
// its pull request is recorded.
func TestDecidedRollbackSurvivesALeaderChange(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	Step(l, w.input(c, t0.Add(time.Minute)))
	w.pinned["prod"], w.obs["prod"] = dB, Assessment{Image: img, Digest: dB, Failure: "Degraded"}
	as := Step(l, w.input(c, t0.Add(2*time.Minute)))
	if find(as, Rollback) == nil || len(Pending(l, as)) != 0 {
		t.Fatalf("the deciding step: %+v, pending %+v; want the rollback once", as, Pending(l, as))
	}
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse(data) // the next leader reads what was written
	if err != nil {
		t.Fatal(err)
	}
	as = Step(next, w.input(c, t0.Add(3*time.Minute)))
	p := Pending(next, as)
	if find(as, Rollback) != nil || len(p) != 1 || p[0].Digest != dA || p[0].Failed != dB || p[0].Evidence != "Degraded" {
		t.Fatalf("the next leader: actions %+v, pending %+v; want the rollback to A pending once", as, p)
	}
	next.RollbackOpened("prod", img, Proposal{PR: 9, Digest: dA, Failed: dB})
	if p := Pending(next, nil); len(p) != 0 {
		t.Errorf("pending after the pull request is recorded: %+v", p)
	}
}
