package release

import (
	"testing"
	"time"
)

// mergeFailing proves A in prod, then merges B, which is not ready, at
// t0+2m (prod's readyTimeout is 2m); it returns the actions of B's step
// halfway through the window, at t0+3m.
func mergeFailing(c Chain, l *Ledger, w *world) []Action {
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	Step(l, w.input(c, t0.Add(time.Minute)))
	w.broken("prod", dB, "app web-prod is Progressing: 0/2 ready")
	if as := Step(l, w.input(c, t0.Add(2*time.Minute))); find(as, ReadyRollback) != nil {
		return nil // readied at the merge: the caller fails
	}
	return Step(l, w.input(c, t0.Add(3*time.Minute)))
}

// TestRollbackReadiedDuringTheWindow: a digest merged into prod and not
// proven halfway through its readiness window gets its rollback branch
// readied, once; at the deadline the rollback is the same commit (At)
// and the branch is kept for its pull request.
func TestRollbackReadiedDuringTheWindow(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	merge := t0.Add(2 * time.Minute)
	ready := find(mergeFailing(c, l, w), ReadyRollback)
	if ready == nil || ready.Digest != dA || ready.Failed != dB || !ready.At.Equal(merge) {
		t.Fatalf("halfway through the window: %+v, want A's rollback readied (not at the merge), at the merge's time", ready)
	}
	if as := Step(l, w.input(c, merge.Add(90*time.Second))); find(as, ReadyRollback) != nil {
		t.Errorf("readied again: %+v", as)
	}
	l.RollbackReadied("prod", img, dB, "pinbot/rollback/prod/web", "h1")
	as := Step(l, w.input(c, merge.Add(3*time.Minute)))
	rb := find(as, Rollback)
	if rb == nil || rb.Digest != dA || !rb.At.Equal(ready.At) {
		t.Fatalf("at the deadline: %+v, want the rollback to A with the readied commit's time %s", as, ready.At)
	}
	if find(as, DropRollback) != nil {
		t.Errorf("the branch the rollback opens on is dropped: %+v", as)
	}
	if l.Lookup("prod", img).Readied != nil {
		t.Error("the ledger still shows the branch readied after the rollback")
	}
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse(data) // the next leader, should the pull request not open
	if err != nil {
		t.Fatal(err)
	}
	if p := Pending(next, nil); len(p) != 1 || !p[0].At.Equal(ready.At) {
		t.Errorf("pending for the next leader: %+v, want the rollback at %s", p, ready.At)
	}
}

// TestReadiedRollbackDroppedOnceProven: the digest proves inside its
// window, and the readied branch is deleted, as it was pushed.
func TestReadiedRollbackDroppedOnceProven(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	mergeFailing(c, l, w)
	l.RollbackReadied("prod", img, dB, "pinbot/rollback/prod/web", "h1")
	w.proven("prod", dB)
	as := Step(l, w.input(c, t0.Add(3*time.Minute+30*time.Second)))
	drop := find(as, DropRollback)
	if drop == nil || drop.Branch != "pinbot/rollback/prod/web" || drop.Head != "h1" || drop.Failed != dB {
		t.Fatalf("B proven: %+v, want the readied branch dropped at h1", as)
	}
	if find(as, Rollback) != nil || find(Step(l, w.input(c, t0.Add(4*time.Minute))), DropRollback) != nil {
		t.Error("rolled back, or dropped twice")
	}
}

// TestReadiedRollbackFollowsTheMerge: another digest merged in the window
// drops the branch readied for the first (a readying that never pushed
// has nothing to drop) and readies one for itself.
func TestReadiedRollbackFollowsTheMerge(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	mergeFailing(c, l, w)
	w.broken("prod", dC, "0/2 ready")
	as := Step(l, w.input(c, t0.Add(3*time.Minute+time.Second)))
	if find(as, DropRollback) != nil || find(as, ReadyRollback) != nil {
		t.Errorf("C merged: %+v; want a readying that never pushed left alone, and C's not readied yet", as)
	}
	as = Step(l, w.input(c, t0.Add(4*time.Minute+time.Second)))
	if r := find(as, ReadyRollback); r == nil || r.Failed != dC || r.Digest != dA {
		t.Errorf("halfway through C's window: %+v, want A's rollback readied against C", as)
	}
}

// TestNothingReadiedForARollbackOrWithoutAProof: pinbot's own rollback
// merging is never rolled back, so nothing is readied for it; nor where
// no digest was proven before.
func TestNothingReadiedForARollbackOrWithoutAProof(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	w.broken("prod", dA, "0/2 ready")
	Step(l, w.input(c, t0))
	w.broken("prod", dB, "0/2 ready")
	Step(l, w.input(c, t0.Add(time.Minute)))
	if as := Step(l, w.input(c, t0.Add(2*time.Minute+30*time.Second))); find(as, ReadyRollback) != nil {
		t.Errorf("readied with nothing proven before: %+v", as)
	}

	c, l, w = chain(), New(), newWorld()
	mergeFailing(c, l, w)
	l.RollbackReadied("prod", img, dB, "pinbot/rollback/prod/web", "h1")
	Step(l, w.input(c, t0.Add(5*time.Minute))) // the deadline: rolled back
	l.RollbackOpened("prod", img, Proposal{PR: 9, Digest: dA, Failed: dB})
	w.broken("prod", dA, "0/2 ready") // the rollback merged
	as := Step(l, w.input(c, t0.Add(6*time.Minute)))
	as = append(as, Step(l, w.input(c, t0.Add(7*time.Minute+30*time.Second)))...)
	if find(as, ReadyRollback) != nil || find(as, DropRollback) != nil {
		t.Errorf("after the rollback merged: %+v, want nothing readied or dropped", as)
	}
}
