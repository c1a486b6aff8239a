package release

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release/freeze"
)

// TestOnlyANewerProvenDigestLiftsAHold: pinning another digest for a pass,
// or proving again a digest proven before the hold, lifts nothing; a
// digest pinned after the hold and proven does.
func TestOnlyANewerProvenDigestLiftsAHold(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Since: t0.Add(time.Minute), From: "prod", Known: []string{dA}})

	// C pinned for one pass, not proven, then the held B again.
	w.pinned["prod"], w.obs["prod"] = dC, Assessment{Image: img, Digest: dC, Why: "0/2 ready"}
	Step(l, w.input(c, t0.Add(2*time.Minute)))
	w.pinned["prod"], w.obs["prod"] = dB, Assessment{Image: img, Digest: dB, Why: "0/2 ready"}
	Step(l, w.input(c, t0.Add(3*time.Minute)))
	if l.Held("prod", img, dB) == nil {
		t.Fatal("pinning another digest for a pass lifted the hold")
	}
	// A, proven before the hold, proven again.
	w.proven("prod", dA)
	Step(l, w.input(c, t0.Add(4*time.Minute)))
	if l.Held("prod", img, dB) == nil {
		t.Fatal("proving again a digest proven before the hold lifted it")
	}
	// C, pinned after the hold and proven.
	w.proven("prod", dC)
	Step(l, w.input(c, t0.Add(5*time.Minute)))
	if l.Held("prod", img, dB) != nil {
		t.Error("a digest pinned after the hold and proven did not lift it")
	}
}

// TestRenameKeepsHolds: renaming an environment in .pinbot.yaml does not
// drop its holds: the chain stops, saying why, admits nothing, and goes on
// once the holds are released.
func TestRenameKeepsHolds(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	w.proven("prod", dA)
	w.proven("staging", dB)
	Step(l, w.input(c, t0))
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Reason: "crash loop", Since: t0, From: "prod"})

	renamed := chain()
	renamed[0].Soak = 0
	renamed[1].Name = "production"
	w.pinned["production"], w.obs["production"] = w.pinned["prod"], w.obs["prod"]
	delete(w.pinned, "prod")
	delete(w.obs, "prod")
	as := Step(l, w.input(renamed, t0.Add(time.Minute)))
	if len(as) != 1 || as[0].Kind != Report || !strings.Contains(as[0].Evidence, "prod "+img+"@"+dB) {
		t.Fatalf("after the rename: %+v, want one report naming the hold", as)
	}
	if as := Step(l, w.input(renamed, t0.Add(2*time.Minute))); len(as) != 0 {
		t.Errorf("the report repeats: %+v", as)
	}
	err := Admit(Admission{Env: "production", Upstream: "staging", Image: img, Digest: dB}, FactsFrom(l, Admission{Env: "production", Upstream: "staging", Image: img, Digest: dB}, t0))
	var r *Refusal
	if !errors.As(err, &r) || r.Rule != RuleStopped {
		t.Errorf("Admit into the renamed environment: %v, want the chain-stopped refusal", err)
	}
	l.Release("prod", img, dB)
	if as := Step(l, w.input(renamed, t0.Add(3*time.Minute))); l.Stopped != "" || find(as, Promote) == nil {
		t.Errorf("after the release: stopped %q, actions %+v; want the chain going on", l.Stopped, as)
	}
}

// TestFreezeDoesNotStopARollback: a failed digest is rolled back inside a
// freeze window, unless the window holds rollbacks; then it is rolled back
// when the window ends.
func TestFreezeDoesNotStopARollback(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(fmt.Sprint("holdRollbacks=", hold), func(t *testing.T) {
			c, l, w := chain(), New(), newWorld()
			// 11:00-12:00 UTC in winter, over the failure at 11:02.
			c[1].Freeze = []freeze.Window{{Start: "0 12 * * *", Duration: time.Hour, TimeZone: "Europe/Berlin", HoldRollbacks: hold}}
			c[1].RollbackWindow = 2 * time.Hour
			start := t0.Add(-time.Hour) // 11:00 UTC
			w.proven("prod", dA)
			Step(l, w.input(c, start))
			Step(l, w.input(c, start.Add(time.Minute)))
			w.pinned["prod"], w.obs["prod"] = dB, Assessment{Image: img, Digest: dB, Failure: "app web-prod is Degraded"}
			as := Step(l, w.input(c, start.Add(2*time.Minute)))
			if rb := find(as, Rollback); (rb != nil) == hold {
				t.Fatalf("inside the freeze: %+v; want a rollback %t", as, !hold)
			}
			if hold {
				if rb := find(Step(l, w.input(c, t0.Add(time.Minute))), Rollback); rb == nil || rb.Digest != dA {
					t.Errorf("after the window: %+v, want the rollback to A", rb)
				}
			}
		})
	}
}

// TestAMergePastTheGateLiftsNoHold: a digest that merged past pinbot's
// gate (a forged pinbot/gate, a direct push) and then proves is marked,
// announced as a Warning, and lifts no hold; the same digest merged
// through the gate would have lifted it.
func TestAMergePastTheGateLiftsNoHold(t *testing.T) {
	for _, bypass := range []string{"", "#7 merged with a pinbot/gate that mallory posted, not pinbot"} {
		c, l, w := chain(), New(), newWorld()
		w.proven("prod", dA)
		Step(l, w.input(c, t0))
		l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Since: t0.Add(time.Minute), From: "prod", Known: []string{dA}})

		w.proven("prod", dC)
		in := w.input(c, t0.Add(2*time.Minute))
		if bypass != "" {
			in.Bypassed = map[string]map[string]string{"prod": {img: bypass}}
		}
		Step(l, in)
		tr := l.Lookup("prod", img)
		lifted := l.Held("prod", img, dB) == nil
		var warned bool
		for _, e := range l.Events {
			warned = warned || (e.Reason == ReasonGateBypassed && strings.Contains(e.What, bypass) && Warning(e.Reason))
		}
		switch {
		case bypass == "" && (!lifted || tr.Bypassed() || warned):
			t.Errorf("through the gate: lifted %v, bypassed %v, warned %v; want the hold lifted, nothing marked", lifted, tr.Bypassed(), warned)
		case bypass != "" && (lifted || !tr.Bypassed() || !warned):
			t.Errorf("past the gate: lifted %v, bypassed %v, warned %v; want the hold kept, the merge marked and announced", lifted, tr.Bypassed(), warned)
		}
	}
}
