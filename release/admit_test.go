package release

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAdmit(t *testing.T) {
	since := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	soaked := since.Add(2 * time.Hour)
	hold := &Hold{Env: "prod", Image: img, Digest: dB, Reason: "crash loop", Since: since}
	for _, tc := range []struct {
		name string
		a    Admission
		f    Facts
		want *Refusal // nil admits
		msg  string
	}{
		{name: "a first environment", a: Admission{Env: "staging", Image: img, Digest: dB}},
		{name: "proven upstream", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB}, f: Facts{Proven: true}},
		{name: "held, forced", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB, Force: true}, f: Facts{Hold: hold, Proven: true},
			want: &Refusal{Rule: RuleHeld, Env: "prod", Image: img, Digest: dB, Since: &since, Detail: "crash loop"},
			msg:  "sha256:bbbbbbbbbbbb of " + img + " is held in prod since 2026-12-02T12:00:00Z: crash loop (lift it with: pinbot hold release prod " + img + "@" + dB + " --reason TEXT)"},
		{name: "held in a first environment", a: Admission{Env: "prod", Image: img, Digest: dB}, f: Facts{Hold: hold},
			want: &Refusal{Rule: RuleHeld, Env: "prod", Image: img, Digest: dB, Since: &since, Detail: "crash loop"}},
		{name: "not proven: another digest pinned", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB}, f: Facts{Pinned: dA, ProvenDigest: dA},
			want: &Refusal{Rule: RuleNotProven, Env: "prod", Image: img, Digest: dB, Upstream: "staging", Detail: "staging pins sha256:aaaaaaaaaaaa, proven"}},
		{name: "not proven: pinned, not yet", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB}, f: Facts{Pinned: dB, ProvenDigest: dA, Why: "0/2 ready"},
			want: &Refusal{Rule: RuleNotProven, Env: "prod", Image: img, Digest: dB, Upstream: "staging", Detail: "staging pins sha256:bbbbbbbbbbbb and has proven sha256:aaaaaaaaaaaa: 0/2 ready"},
			msg:  "sha256:bbbbbbbbbbbb of " + img + " is not proven in staging, which prod takes its digests from: staging pins sha256:bbbbbbbbbbbb and has proven sha256:aaaaaaaaaaaa: 0/2 ready; pass --force with --reason to promote it anyway"},
		{name: "forced past the proof", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB, Force: true}},
		{name: "proven, soaking", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB, Soak: 2 * time.Hour},
			f:    Facts{Proven: true, Since: since, Now: until},
			want: &Refusal{Rule: RuleSoaking, Env: "prod", Image: img, Digest: dB, Upstream: "staging", Since: &since, Until: &soaked},
			msg:  "sha256:bbbbbbbbbbbb of " + img + " is proven in staging since 2026-12-02T12:00:00Z and soaks there until 2026-12-02T14:00:00Z before prod takes it; pass --force with --reason to promote it anyway"},
		{name: "proven, soaked", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB, Soak: time.Hour}, f: Facts{Proven: true, Since: since, Now: until}},
		{name: "soaking, forced", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB, Soak: 2 * time.Hour, Force: true}, f: Facts{Proven: true, Since: since, Now: until}},
		{name: "frozen, forced", a: Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB, Force: true}, f: Facts{FrozenUntil: &until},
			want: &Refusal{Rule: RuleFrozen, Env: "prod", Image: img, Digest: dB, Until: &until}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Admit(tc.a, tc.f)
			var got *Refusal
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Admit = %v, want a *Refusal", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message %q\nwant     %q", err, tc.msg)
			}
		})
	}
}

// TestFactsFrom reads holds, proofs and freezes from a ledger.
func TestFactsFrom(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	l := New()
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Reason: "failed", Since: now})
	st := l.Track("staging", img)
	st.Pinned, st.Proven, st.ProvenSince = dB, dB, &now
	pr := l.Track("prod", img)
	later, earlier := now.Add(time.Hour), now.Add(-time.Hour)
	pr.FrozenUntil = &later
	f := FactsFrom(l, Admission{Env: "prod", Upstream: "staging", Image: img, Digest: dB}, now)
	if f.Hold == nil || !f.Proven || !f.Since.Equal(now) || !f.Now.Equal(now) || f.FrozenUntil == nil || !f.FrozenUntil.Equal(later) {
		t.Errorf("facts %+v, want the hold, the proof since now and the freeze", f)
	}
	pr.FrozenUntil = &earlier
	if f := FactsFrom(l, Admission{Env: "prod", Image: img, Digest: dA}, now); f.Hold != nil || f.FrozenUntil != nil {
		t.Errorf("facts %+v, want no hold on another digest and no freeze that ended", f)
	}
}

// TestReleaseByRecordsWhoAndWhy: a person lifting a hold is in the
// ledger's events, with why.
func TestReleaseByRecordsWhoAndWhy(t *testing.T) {
	l := New()
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Since: t0, From: "prod"})
	if l.ReleaseBy("prod", img, dA, "alice", "x", t0) {
		t.Error("released a digest that is not held")
	}
	if !l.ReleaseBy("prod", img, dB, "alice@example.com", "the outage was the database, not the image", t0) || l.Held("prod", img, dB) != nil {
		t.Fatal("the hold is still there")
	}
	if e := l.Events[len(l.Events)-1]; e.What != "alice@example.com released the hold on sha256:bbbbbbbbbbbb: the outage was the database, not the image" {
		t.Errorf("event %q", e.What)
	}
}

// TestReleaseLiftsEnvAndBelow: a failure in staging held the digest in
// staging, qa and prod; lifting it in qa lifts qa and prod, never staging,
// nor another failure's hold on the same digest, from the ledger alone.
func TestReleaseLiftsEnvAndBelow(t *testing.T) {
	l := New()
	l.hold([]string{"canary"}, Hold{Image: img, Digest: dB, Since: t0, From: "canary"})
	l.hold([]string{"staging", "qa", "prod"}, Hold{Image: img, Digest: dB, Since: t0, From: "staging"})
	if !l.Release("qa", img, dB) {
		t.Fatal("nothing released in qa")
	}
	var left []string
	for _, h := range l.Holds {
		left = append(left, h.From+">"+h.Env)
	}
	if strings.Join(left, " ") != "canary>canary staging>staging" {
		t.Errorf("holds left %q, want canary's and staging's own", left)
	}
}
