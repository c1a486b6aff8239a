package release

import (
	"errors"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/trust/proven"
)

// external is a chain whose prod takes staging's digests from another
// installation's attestations: staging is not declared here.
func external() Chain {
	c := Chain{{Name: "prod", From: "staging", Paths: []string{"envs/prod/**"}, Apps: []string{"web-prod"},
		RequireAttestation: true, AttestationKeys: []string{"keys/staging.pub"}, UpstreamSoak: time.Hour}}
	c.Defaults()
	return c
}

// TestAdmitRequiresAttestation: an environment that requires the
// upstream's attestation admits a digest only with one that says it was
// proven there for the soak: a missing or failing one refuses, one
// signed before the soak could end waits for the next, one signed after
// that says less refuses, and --force waives it but no hold.
func TestAdmitRequiresAttestation(t *testing.T) {
	a, ok := external().Admission("prod", img, dB)
	if !ok || !a.External || !a.RequireAttestation || a.Soak != time.Hour || a.Upstream != "staging" {
		t.Fatalf("Admission = %+v, want an external upstream, its attestation required for 1h", a)
	}
	since := t0.Add(-30 * time.Minute)
	soaked := &proven.Attested{Passed: true, ProvenSince: t0.Add(-2 * time.Hour), ProvenFor: 90 * time.Minute, AttestedAt: t0.Add(-30 * time.Minute)}
	forced := a
	forced.Force = true
	for _, tc := range []struct {
		name  string
		a     Admission
		at    *proven.Attested
		f     Facts
		rule  string // "" admits
		inMsg string
	}{
		{"none read", a, nil, Facts{Now: t0}, RuleNotAttested, "carries no attestation that it was proven in staging, which prod requires: no attestation was read"},
		{"none passes", a, &proven.Attested{Why: "key keys/staging.pub: signature mismatch"}, Facts{Now: t0}, RuleNotAttested, "signature mismatch"},
		{"proven, soaking", a, &proven.Attested{Passed: true, ProvenSince: since, AttestedAt: since}, Facts{Now: t0}, RuleSoaking, "soaks there until 2026-12-02T12:30:00Z"},
		{"soak passed, attested before it ended", a, &proven.Attested{Passed: true, ProvenSince: since, ProvenFor: 10 * time.Minute, AttestedAt: since.Add(10 * time.Minute)}, Facts{Now: t0.Add(time.Hour)},
			RuleNotAttested, "the longest-proven attestation says staging for 10m0s (attested at 2026-12-02T11:40:00Z), less than 1h0m0s"},
		{"soaked", a, soaked, Facts{Now: t0}, "", ""},
		{"forced", forced, nil, Facts{Now: t0}, "", ""},
		{"held, though attested", a, soaked, Facts{Now: t0, Hold: &Hold{Image: img, Digest: dB, Reason: "crash loop", Since: t0}}, RuleHeld, "crash loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			a.Attested = tc.at
			err := Admit(a, tc.f)
			var r *Refusal
			switch {
			case tc.rule == "" && err != nil:
				t.Errorf("Admit = %v, want admitted", err)
			case tc.rule != "" && (!errors.As(err, &r) || r.Rule != tc.rule || !strings.Contains(err.Error(), tc.inMsg)):
				t.Errorf("Admit = %v, want %s with %q", err, tc.rule, tc.inMsg)
			}
		})
	}
}

// TestAttestationBesidesTheLedger: with staging in the chain, prod's
// requireAttestation asks for both: the ledger's proof first, then the
// attestation. A pull request's gate and pinbot's own proposal's gate
// wait for the attestation.
func TestAttestationBesidesTheLedger(t *testing.T) {
	c := chain()
	c[1].RequireAttestation, c[1].AttestationKeys = true, []string{"keys/cosign.pub"}
	l := New()
	st := l.Track("staging", img)
	provenAt := t0.Add(-time.Hour)
	st.Pinned, st.Proven, st.ProvenSince = dB, dB, &provenAt
	base := map[string]map[string]string{"staging": {img: dB}, "prod": {img: dA}}
	attestation := map[string]*proven.Attested{}
	of := func(a Admission) *proven.Attested {
		if a.Upstream != "staging" || a.External {
			t.Errorf("asked for the attestation of %+v", a)
		}
		return attestation[a.Digest]
	}
	judge := func(head string) (commitstatus.State, string) {
		return JudgePull(l, c, base, headOf(map[string]map[string]string{"staging": {img: dB}, "prod": {img: head}}), t0, of)
	}
	if state, desc := judge(dD); state != commitstatus.Failure || !strings.Contains(desc, "is not proven in staging") {
		t.Errorf("an unproven digest: %s: %s; want the ledger's refusal first", state, desc)
	}
	if state, desc := judge(dB); state != commitstatus.Failure || !strings.Contains(desc, "no attestation was read") {
		t.Errorf("proven, no attestation: %s: %s; want a failure for the missing attestation", state, desc)
	}
	attestation[dB] = &proven.Attested{Passed: true, ProvenSince: provenAt, ProvenFor: 2 * time.Minute, AttestedAt: provenAt.Add(2 * time.Minute)}
	if state, desc := judge(dB); state != commitstatus.Failure || !strings.Contains(desc, "less than 10m0s") {
		t.Errorf("attested short of the soak: %s: %s; want a failure", state, desc)
	}
	attestation[dB] = &proven.Attested{Passed: true, ProvenSince: provenAt, ProvenFor: 10 * time.Minute, AttestedAt: provenAt.Add(10 * time.Minute)}
	if state, desc := judge(dB); state != commitstatus.Success {
		t.Errorf("attested for the soak: %s: %s; want success", state, desc)
	}

	// pinbot's own proposal: its gate waits for the attestation too.
	w := newWorld()
	l = New()
	delete(attestation, dB)
	w.proven("prod", dA)
	w.proven("staging", dA)
	in := func(at time.Duration) Input {
		in := w.input(c, t0.Add(at))
		in.Attested = of
		return in
	}
	Step(l, in(0))
	w.proven("staging", dB)
	Step(l, in(time.Minute))
	l.Proposed("prod", img, Proposal{PR: 7, Digest: dB, Head: "h1", From: "staging"})
	gate := func(at time.Duration) *Action {
		g := find(Step(l, in(at)), Gate)
		if g != nil {
			l.Posted("prod", img, g.PR, g.State, g.Description)
		}
		return g
	}
	if g := gate(12 * time.Minute); g == nil || g.State != commitstatus.Pending ||
		g.Description != "proven in staging; waiting for its signed attestation: no attestation was read" {
		t.Fatalf("soaked, not attested: gate %+v, want pending for the attestation", g)
	}
	attestation[dB] = &proven.Attested{Passed: true, ProvenSince: t0.Add(time.Minute), ProvenFor: 10 * time.Minute, AttestedAt: t0.Add(11 * time.Minute)}
	if g := gate(13 * time.Minute); g == nil || g.State != commitstatus.Success {
		t.Fatalf("attested: gate %+v, want success", g)
	}
}

// TestValidateAttestation: requireAttestation needs from and keys; an
// undeclared from needs requireAttestation; upstreamSoak is for an
// undeclared from only.
func TestValidateAttestation(t *testing.T) {
	ok := func(string) bool { return true }
	noGlobErr := func(string) error { return nil }
	for _, tc := range []struct {
		name string
		edit func(c Chain) Chain
		want string // "" for valid
	}{
		{"external upstream", func(c Chain) Chain { return external() }, ""},
		{"undeclared from", func(c Chain) Chain {
			c = external()
			c[0].RequireAttestation, c[0].AttestationKeys, c[0].UpstreamSoak = false, nil, 0
			return c
		},
			`comes from "staging", which is not declared before it (or set requireAttestation`},
		{"no keys", func(c Chain) Chain { c = external(); c[0].AttestationKeys = nil; return c }, "name the cosign public keys"},
		{"no from", func(c Chain) Chain { c[0].RequireAttestation, c[0].AttestationKeys = true, []string{"k.pub"}; return c }, "comes from no environment"},
		{"keys alone", func(c Chain) Chain { c[1].AttestationKeys = []string{"k.pub"}; return c }, "without requireAttestation: true"},
		{"upstreamSoak of a declared from", func(c Chain) Chain {
			c[1].RequireAttestation, c[1].AttestationKeys, c[1].UpstreamSoak = true, []string{"k.pub"}, time.Hour
			return c
		}, "its own soak counts"},
		{"negative upstreamSoak", func(c Chain) Chain { c = external(); c[0].UpstreamSoak = -time.Hour; return c }, "upstreamSoak must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs := tc.edit(chain()).Validate(ok, noGlobErr)
			switch {
			case tc.want == "" && len(probs) > 0:
				t.Errorf("Validate = %+v, want none", probs)
			case tc.want != "" && !containsMsg(probs, tc.want):
				t.Errorf("Validate = %+v, want %q", probs, tc.want)
			}
		})
	}
}

func containsMsg(probs []Problem, want string) bool {
	for _, p := range probs {
		if strings.Contains(p.Msg, want) {
			return true
		}
	}
	return false
}
