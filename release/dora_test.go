package release

import (
	"testing"
	"time"
)

// TestDORAFromProof: the ledger tallies prod's DORA keys as the chain
// steps, and keeps them after its events are gone: B merged and proven a
// minute later is a deployment with a minute's lead; C failing at once
// is a failed deployment, held and rolled back; the rollback to B proven
// two minutes after C's hold is a deployment that restores. A person's
// hold is no failure.
func TestDORAFromProof(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	w.proven("prod", dA)
	Step(l, w.input(c, at(0)))
	Step(l, w.input(c, at(1)))
	if l.DORA["prod"] != nil {
		t.Fatalf("the digest prod ran at the first look counted: %+v", l.DORA["prod"])
	}
	w.pinned["prod"], w.obs["prod"] = dB, Assessment{Image: img, Digest: dB, Why: "app web-prod is Progressing: 0/1 ready"}
	Step(l, w.input(c, at(2)))
	w.proven("prod", dB)
	Step(l, w.input(c, at(3)))
	w.pinned["prod"], w.obs["prod"] = dC, Assessment{Image: img, Digest: dC, Why: "x", Failure: "app web-prod is Degraded: ProgressDeadlineExceeded"}
	Step(l, w.input(c, at(4)))
	if rb := l.Lookup("prod", img).Rollback; rb == nil || rb.Digest != dB {
		t.Fatalf("C failed: rollback %+v, want one to B", rb)
	}
	l.RollbackOpened("prod", img, Proposal{PR: 9, Digest: dB, Failed: dC})
	w.pinned["prod"], w.obs["prod"] = dB, Assessment{Image: img, Digest: dB, Why: "app web-prod is Progressing: 0/1 ready"}
	Step(l, w.input(c, at(5)))
	w.proven("prod", dB)
	Step(l, w.input(c, at(6)))
	l.LogBy(at(7), "prod", img, ReasonHeld, "olga held D", "olga", "a CVE")
	l.Events = nil // the tallies outlive the events

	want := Tally{Since: at(3), Deployments: 2, Lead: 2 * time.Minute, Failures: 1, Restores: 1, Restore: 2 * time.Minute}
	if got := l.DORA["prod"]; got == nil || *got != want {
		t.Errorf("prod's tally = %+v, want %+v", got, want)
	}
	raw, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.DORA["prod"]; got == nil || *got != want {
		t.Errorf("the tally after a write and a read = %+v, want %+v", got, want)
	}
}
