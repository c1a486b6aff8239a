package release

import (
	"strings"
	"testing"
	"time"
)

// TestARollbackAskedFor: prod runs dB, proven after dA. A person asks to
// roll it back: the next step holds dB in prod, opens pinbot's rollback
// to dA with who and why as its evidence, and the hold says it too.
// Nothing to roll back to, a second ask, or no digest pinned, is an
// error that says so.
func TestARollbackAskedFor(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	w.proven("staging", dA)
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	if err := l.AskRollback("prod", img, "olga", "checkout errors", t0); err == nil || !strings.Contains(err.Error(), "nothing was proven in prod before") {
		t.Errorf("a rollback of the first digest proven: %v", err)
	}
	w.proven("staging", dB)
	w.proven("prod", dB)
	Step(l, w.input(c, t0.Add(time.Hour)))
	if err := l.AskRollback("prod", img, "olga", "checkout errors", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.AskRollback("prod", img, "vic", "me too", t0.Add(2*time.Hour)); err == nil {
		t.Error("a second ask was taken")
	}
	if err := l.AskRollback("dev", img, "vic", "no such", t0.Add(2*time.Hour)); err == nil || !strings.Contains(err.Error(), "Git pins no") {
		t.Errorf("an environment pinning nothing: %v", err)
	}
	as := Step(l, w.input(c, t0.Add(2*time.Hour+time.Minute)))
	rb := find(as, Rollback)
	if rb == nil || rb.Env != "prod" || rb.Digest != dA || rb.Failed != dB || rb.Evidence != "rolled back by olga: checkout errors" {
		t.Fatalf("the asked rollback: %+v (actions %q)", rb, kinds(as))
	}
	if h := l.Held("prod", img, dB); h == nil || h.Reason != "rolled back by olga: checkout errors" || h.RolledBackTo != dA {
		t.Errorf("the hold: %+v", h)
	}
	if tr := l.Lookup("prod", img); tr.RollbackAsked != nil || tr.Rollback == nil {
		t.Errorf("the track after the step: asked %+v, rollback %+v", tr.RollbackAsked, tr.Rollback)
	}
	if n := len(l.Audit); n != 1 || l.Audit[0].Reason != ReasonRollbackAsked || l.Audit[0].By != "olga" {
		t.Errorf("the audit: %+v", l.Audit)
	}
}
