package release

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/release/freeze"
)

const (
	img = "registry.example/org/web"
	dA  = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB  = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC  = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	dD  = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func chain() Chain {
	c := Chain{
		{Name: "staging", Paths: []string{"envs/staging/**"}, Apps: []string{"web-staging"}, Soak: 10 * time.Minute},
		{Name: "prod", From: "staging", Paths: []string{"envs/prod/**"}, Apps: []string{"web-prod"}, ReadyTimeout: 2 * time.Minute},
	}
	c.Defaults()
	return c
}

// world is what Git pins and what the environments show, changed by the
// test between steps.
type world struct {
	pinned map[string]string     // env to the digest of img
	obs    map[string]Assessment // env to the observation of img
}

func newWorld() *world { return &world{pinned: map[string]string{}, obs: map[string]Assessment{}} }

func (w *world) proven(env, digest string) {
	w.pinned[env] = digest
	w.obs[env] = Assessment{Image: img, Digest: digest, Proven: true, Pods: []Pod{{App: "web-" + env, Namespace: env, Pod: "web-1", Container: "app", Node: "n1", Running: digest, Verdict: "Verified", Ready: true}}}
}

func (w *world) broken(env, digest, why string) {
	w.pinned[env] = digest
	w.obs[env] = Assessment{Image: img, Digest: digest, Why: why}
}

func (w *world) input(c Chain, now time.Time) Input {
	in := Input{Now: now, Chain: c, Pinned: map[string]map[string]string{}, Assessed: map[string]map[string]Assessment{}}
	for env, d := range w.pinned {
		in.Pinned[env] = map[string]string{img: d}
	}
	for env, o := range w.obs {
		in.Assessed[env] = map[string]Assessment{img: o}
	}
	return in
}

func kinds(as []Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(a.Kind)+" "+a.Env)
	}
	return out
}

func find(as []Action, k Kind) *Action {
	for i := range as {
		if as[i].Kind == k {
			return &as[i]
		}
	}
	return nil
}

// TestSoakThenOnward: a digest proven in staging is proposed to prod at
// once, carrying the proof; its gate stays pending until the proof has
// held for the soak, a break restarts the soak, and the gate goes green
// when it completes. Auto-merge waits for the green gate.
func TestSoakThenOnward(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[1].AutoMerge = true
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, w.input(c, t0)) // first look
	w.proven("staging", dB)
	as := Step(l, w.input(c, t0.Add(time.Minute)))
	p := find(as, Promote)
	if p == nil || p.Env != "prod" || p.Digest != dB || p.From != "staging" {
		t.Fatalf("a fresh proof: actions %+v, want a promotion of B into prod", as)
	}
	if p.Proof.Since != t0.Add(time.Minute) || p.Proof.Held != 0 || p.Proof.Soak != 10*time.Minute || len(p.Proof.Pods) != 1 {
		t.Errorf("proof %+v, want it proven since +1m, soak 10m, with its Pod", p.Proof)
	}
	l.Proposed("prod", img, Proposal{PR: 7, Digest: dB, Head: "h1", From: "staging"})
	gate := func(at time.Duration) *Action {
		t.Helper()
		as := Step(l, w.input(c, t0.Add(at)))
		if find(as, Promote) != nil || (find(as, MergePR) != nil) != (at >= 17*time.Minute && at < 20*time.Minute) {
			t.Fatalf("at +%s: %+v, want no second promotion, and merges only once the soak completed and while green", at, as)
		}
		g := find(as, Gate)
		if g != nil {
			l.Posted("prod", img, g.PR, g.State, g.Description)
		}
		return g
	}
	if g := gate(2 * time.Minute); g == nil || g.State != commitstatus.Pending || g.PR != 7 || g.Head != "h1" ||
		g.Description != "proven in staging, soaking until 2026-12-02T12:11:00Z" {
		t.Fatalf("during the soak: gate %+v, want pending until +11m", g)
	}
	// A stale Pod at +6m breaks the proof: the soak restarts at +7m.
	w.broken("staging", dB, "pod staging/web-1 container app is Mismatch")
	if g := gate(6 * time.Minute); g == nil || g.State != commitstatus.Failure || !strings.Contains(g.Description, "web-1") {
		t.Fatalf("after the break: gate %+v, want failure naming the Pod", g)
	}
	w.proven("staging", dB)
	if g := gate(7 * time.Minute); g == nil || g.State != commitstatus.Pending || !strings.HasSuffix(g.Description, "until 2026-12-02T12:17:00Z") {
		t.Fatalf("proven again: gate %+v, want pending until +17m", g)
	}
	if g := gate(12 * time.Minute); g != nil {
		t.Fatalf("soak restarted at +7m: gate at +12m %+v, want none posted", g)
	}
	if g := gate(17 * time.Minute); g == nil || g.State != commitstatus.Success || g.Description != "proven in staging for 10m0s" {
		t.Fatalf("after the soak: gate %+v, want green", g)
	}
	if g := gate(19 * time.Minute); g != nil {
		t.Errorf("gate posted again while it stays green: %+v", g)
	}
	// Upstream regresses: the gate turns red, naming why.
	w.broken("staging", dB, "pod staging/web-2 container app is Mismatch: running sha256:dd…")
	if g := gate(20 * time.Minute); g == nil || g.State != commitstatus.Failure || !strings.Contains(g.Description, "web-2") {
		t.Errorf("after the regression: gate %+v, want failure naming the Pod", g)
	}
}

// TestNewerDigestMovesTheProposal: a newer digest proven upstream while
// the downstream pull request is open moves it.
func TestNewerDigestMovesTheProposal(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, w.input(c, t0))
	w.proven("staging", dB)
	Step(l, w.input(c, t0.Add(time.Minute)))
	l.Proposed("prod", img, Proposal{PR: 7, Digest: dB, Head: "h1", From: "staging"})
	w.proven("staging", dC)
	p := find(Step(l, w.input(c, t0.Add(2*time.Minute))), Promote)
	if p == nil || p.Digest != dC || p.Env != "prod" {
		t.Fatalf("a newer digest proven upstream: %+v, want the proposal moved to C", p)
	}
}

// TestFreezeHoldsOnwardAndMerge: inside a freeze window nothing is opened
// or merged, the gate says until when, and both happen after it.
func TestFreezeHoldsOnwardAndMerge(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	c[1].AutoMerge = true
	c[1].Freeze = []freeze.Window{{Start: "0 12 * * *", Duration: time.Hour, TimeZone: "Europe/Berlin"}} // 11:00-12:00 UTC in winter
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, w.input(c, t0.Add(-2*time.Hour)))
	w.proven("staging", dB)
	in := w.input(c, t0.Add(-90*time.Minute)) // 10:30 UTC: open
	if p := find(Step(l, in), Promote); p == nil {
		t.Fatal("outside the window: no promotion")
	}
	l.Proposed("prod", img, Proposal{PR: 7, Digest: dB, Head: "h1", From: "staging"})
	as := Step(l, w.input(c, t0.Add(-30*time.Minute))) // 11:30 UTC: frozen
	g := find(as, Gate)
	if find(as, MergePR) != nil || g == nil || g.State != commitstatus.Pending || !strings.Contains(g.Description, "frozen until 2026-12-02T12:00:00Z") {
		t.Fatalf("inside the window: %+v, want a pending gate saying until 12:00Z and no merge", as)
	}
	if tr := l.Lookup("prod", img); tr.FrozenUntil == nil || !tr.FrozenUntil.Equal(t0) {
		t.Errorf("ledger FrozenUntil = %v, want %v", tr.FrozenUntil, t0)
	}
	l.Posted("prod", img, g.PR, g.State, g.Description)
	as = Step(l, w.input(c, t0.Add(time.Minute)))
	if g := find(as, Gate); g == nil || g.State != commitstatus.Success || find(as, MergePR) == nil {
		t.Errorf("after the window: %+v, want the gate green and a merge", as)
	}
	// The window's start and end are each one event of prod's, at the
	// step that saw them.
	var freezes []string
	for _, e := range l.Events {
		if e.Reason == ReasonFreezeStarted || e.Reason == ReasonFreezeEnded {
			freezes = append(freezes, e.At.UTC().Format("15:04")+" "+e.Env+" "+e.Reason+": "+e.What)
		}
	}
	want := []string{
		"11:30 prod FreezeStarted: a freeze window holds prod until 2026-12-02T12:00:00Z: nothing is opened or merged there",
		"12:01 prod FreezeEnded: the freeze window of prod ended",
	}
	if !slices.Equal(freezes, want) {
		t.Errorf("freeze events:\n%s\nwant\n%s", strings.Join(freezes, "\n"), strings.Join(want, "\n"))
	}
}

// TestRollbackToLastProven: a digest merged into prod that does not prove
// within readyTimeout is rolled back to the digest proven before it, and
// held in prod; a Mismatch rolls back at once.
func TestRollbackToLastProven(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		obs   Assessment
		want  string // part of the evidence
	}{
		{"never ready", 3 * time.Minute, Assessment{Image: img, Digest: dB, Why: "app web-prod is Progressing: 0/2 ready", Pods: []Pod{{Namespace: "prod", Pod: "web-9", Container: "app", Verdict: "Verified"}}}, "not proven within 2m0s of the merge (pinbot saw it merged at 2026-12-02T12:02:00Z, deadline 2026-12-02T12:04:00Z): app web-prod is Progressing"},
		{"crash loop", 3 * time.Minute, Assessment{Image: img, Digest: dB, Why: "waiting", Pods: []Pod{{Namespace: "prod", Pod: "web-9", Container: "app", Verdict: "Verified", Waiting: "CrashLoopBackOff"}}}, "pod prod/web-9 container app: CrashLoopBackOff"},
		{"image pull", 3 * time.Minute, Assessment{Image: img, Digest: dB, Why: "pending", Pods: []Pod{{Namespace: "prod", Pod: "web-9", Container: "app", Verdict: "Pending", Reason: "not started yet: ImagePullBackOff"}}}, "ImagePullBackOff"},
		{"mismatch", 3 * time.Minute, Assessment{Image: img, Digest: dB, Why: "pod prod/web-9 container app is Mismatch: running sha256:dd…, Git sha256:bb…"}, "running sha256:dd"},
		{"degraded at once", 10 * time.Second, Assessment{Image: img, Digest: dB, Why: "x", Failure: "app web-prod is Degraded: ProgressDeadlineExceeded"}, "ProgressDeadlineExceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, l, w := chain(), New(), newWorld()
			w.proven("prod", dA)
			Step(l, w.input(c, t0))
			Step(l, w.input(c, t0.Add(time.Minute))) // A proven for a while
			w.pinned["prod"], w.obs["prod"] = dB, tc.obs
			merge := t0.Add(2 * time.Minute)
			as := Step(l, w.input(c, merge))
			if tc.after > time.Minute && find(as, Rollback) != nil {
				t.Fatalf("rolled back at the merge: %+v", as)
			}
			as = append(as, Step(l, w.input(c, merge.Add(tc.after)))...)
			rb := find(as, Rollback)
			if rb == nil || rb.Digest != dA || rb.Failed != dB || !strings.Contains(rb.Evidence, tc.want) {
				t.Fatalf("actions %+v, want a rollback to A with evidence %q", as, tc.want)
			}
			if h := l.Held("prod", img, dB); h == nil || h.RolledBackTo != dA {
				t.Errorf("hold of B in prod = %+v", h)
			}
			if find(Step(l, w.input(c, merge.Add(tc.after+time.Minute))), Rollback) != nil {
				t.Error("a second rollback of the same failure")
			}
			// The rollback merges and fails too: not rolled back.
			l.RollbackOpened("prod", img, Proposal{PR: 9, Digest: dA, Failed: dB})
			w.pinned["prod"], w.obs["prod"] = dA, Assessment{Image: img, Digest: dA, Failure: "mismatch again"}
			as = Step(l, w.input(c, merge.Add(tc.after+2*time.Minute)))
			if find(as, Rollback) != nil || find(as, Report) == nil || !strings.Contains(find(as, Report).Evidence, "does not roll back a rollback") {
				t.Errorf("a failing rollback: %+v, want it reported and not rolled back", as)
			}
			// The rollback's digest does not lift the hold on B.
			if l.Held("prod", img, dB) == nil {
				t.Error("pinning the rollback's digest lifted the hold")
			}
		})
	}
}

// TestFailureAfterTheWindow is reported, not rolled back.
func TestFailureAfterTheWindow(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[1].RollbackWindow = 10 * time.Minute
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	w.proven("prod", dB)
	Step(l, w.input(c, t0.Add(time.Minute)))
	w.obs["prod"] = Assessment{Image: img, Digest: dB, Failure: "mismatch"}
	as := Step(l, w.input(c, t0.Add(30*time.Minute)))
	if find(as, Rollback) != nil || l.Held("prod", img, dB) != nil {
		t.Errorf("failure after the window: %+v, holds %+v; want neither a rollback nor a hold", as, l.Holds)
	}
}

// TestHeldDigestGoesNowhere: a digest held in prod is not proposed there,
// even proven upstream, until a newer digest arrives or it is released.
func TestHeldDigestGoesNowhere(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[0].Soak = 0
	w.proven("prod", dA)
	w.proven("staging", dB)
	Step(l, w.input(c, t0))
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Reason: "failed", Since: t0, From: "prod"})
	if p := find(Step(l, w.input(c, t0.Add(time.Minute))), Promote); p != nil {
		t.Fatalf("a held digest was proposed: %+v", p)
	}
	if !l.Release("prod", img, dB) || l.Held("prod", img, dB) != nil {
		t.Fatal("Release did not lift the hold")
	}
	if p := find(Step(l, w.input(c, t0.Add(2*time.Minute))), Promote); p == nil || p.Digest != dB {
		t.Errorf("after the release: %+v, want B proposed", p)
	}
	// A newer digest pinned in prod lifts a hold on an older one.
	l.hold([]string{"prod"}, Hold{Image: img, Digest: dB, Since: t0, From: "prod", RolledBackTo: dA})
	w.proven("prod", dC)
	Step(l, w.input(c, t0.Add(3*time.Minute)))
	if l.Held("prod", img, dB) != nil {
		t.Error("a newer digest in prod did not lift the hold on B")
	}
}

func TestValidate(t *testing.T) {
	c := Chain{
		{Name: "a", Paths: []string{"a/**"}},
		{Name: "b", From: "a", Paths: []string{"b/**"}},
		{Name: "b", From: "z", Rollback: "maybe", Soak: -time.Second, Freeze: []freeze.Window{{Start: "never", Duration: time.Hour}, {Start: "0 18 * * 5", Duration: 2562047 * time.Hour}}},
	}
	var got []string
	for _, p := range c.Validate(func(s string) bool { return s != "" }, func(string) error { return nil }) {
		got = append(got, p.Key+": "+p.Msg)
	}
	want := []string{
		`from: environment "b" comes from "a", which names no apps to prove a digest`,
		`name: environment "b" defined twice`,
		`from: environment "b" comes from "z", which is not declared before it (or set requireAttestation to take another installation's attestation of "z")`,
		`: environment "b" has no paths`,
		`soak: soak must not be negative`,
		`rollback: rollback "maybe": want pr or auto`,
		`freeze: freeze start "never": expected exactly 5 fields, found 1: [never]`,
		`freeze: freeze starting "0 18 * * 5": duration 2562047h0m0s is longer than pinbot's bound of 336h0m0s`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestNextDeadline: serve steps when a soak ends or a merged digest's
// readyTimeout passes, not only at its next tick.
func TestNextDeadline(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	if _, ok := l.NextDeadline(c, t0); ok {
		t.Fatal("an empty ledger has a deadline")
	}
	w.proven("prod", dA)
	w.proven("staging", dA)
	Step(l, w.input(c, t0))
	w.proven("staging", dB)
	Step(l, w.input(c, t0.Add(time.Minute)))
	// staging's soak of B ends at +11m; prod's A soak (0 by default)
	// has ended already.
	if next, ok := l.NextDeadline(c, t0.Add(2*time.Minute)); !ok || !next.Equal(t0.Add(11*time.Minute)) {
		t.Errorf("NextDeadline = %v %t, want the end of staging's soak at +11m", next, ok)
	}
	// C merges into prod unproven at +3m: its rollback is readied
	// halfway through its readyTimeout (2m), at +4m, which ends at +5m,
	// both before staging's soak.
	w.broken("prod", dC, "pod prod/web-1 container app is not Ready")
	Step(l, w.input(c, t0.Add(3*time.Minute)))
	if next, ok := l.NextDeadline(c, t0.Add(3*time.Minute)); !ok || !next.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("NextDeadline = %v %t, want the rollback readied at +4m", next, ok)
	}
	Step(l, w.input(c, t0.Add(4*time.Minute)))
	if next, ok := l.NextDeadline(c, t0.Add(4*time.Minute)); !ok || !next.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("NextDeadline = %v %t, want prod's readyTimeout at +5m", next, ok)
	}
}

// TestRollbackCarriesTheGate: pinbot's open rollback pull request gets
// pinbot's own pinbot/gate success once (a branch protection that
// requires the gate then lets it merge), and with rollback: auto it is
// merged at the head pinbot pushed. Before, a rollback never carried the
// gate, so the protection pinbot recommends blocked rollback: auto.
func TestRollbackCarriesTheGate(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	c[1].Rollback = RollbackAuto
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	l.Track("prod", img).Rollback = &Proposal{PR: 9, Digest: dA, Failed: dB, Head: "rb1"}
	as := Step(l, w.input(c, t0.Add(time.Minute)))
	g, m := find(as, Gate), find(as, MergePR)
	if g == nil || g.PR != 9 || g.Head != "rb1" || g.State != commitstatus.Success || !g.IsRollback || !strings.Contains(g.Description, "rolls back to") {
		t.Fatalf("gate %+v, want pinbot's success on the rollback's head", g)
	}
	if m == nil || m.PR != 9 || m.Head != "rb1" || !m.IsRollback {
		t.Errorf("merge %+v, want the rollback merged at the head pinbot pushed", m)
	}
	l.Posted("prod", img, g.PR, g.State, g.Description)
	if g := find(Step(l, w.input(c, t0.Add(2*time.Minute))), Gate); g != nil {
		t.Errorf("posted again: %+v", g)
	}
}

// TestValidateRefusesOverlappingPaths: a staging promotion must not
// rewrite prod's files, so no file may belong to two environments.
func TestValidateRefusesOverlappingPaths(t *testing.T) {
	c := Chain{
		{Name: "staging", Paths: []string{"envs/**"}, Apps: []string{"web-staging"}},
		{Name: "prod", From: "staging", Paths: []string{"envs/prod/**"}, Apps: []string{"web-prod"}},
	}
	probs := c.Validate(func(string) bool { return true }, func(string) error { return nil })
	if len(probs) != 1 || probs[0].Key != "paths" || probs[0].Msg != `environment "prod"'s path "envs/prod/**" overlaps environment "staging"'s "envs/**": a file may belong to one environment only` {
		t.Errorf("problems %+v, want the overlap named", probs)
	}
}

// TestAProofAfterTheDeadlineKeepsTheRollback: B is not proven within
// readyTimeout, so the rollback to A is decided and opened and B held;
// B then proves while the rollback is still open. The deadline decided:
// the rollback and the hold stay, and nothing new is opened.
func TestAProofAfterTheDeadlineKeepsTheRollback(t *testing.T) {
	c, l, w := chain(), New(), newWorld()
	w.proven("prod", dA)
	Step(l, w.input(c, t0))
	Step(l, w.input(c, t0.Add(time.Minute)))
	w.pinned["prod"], w.obs["prod"] = dB, Assessment{Image: img, Digest: dB, Why: "app web-prod is Progressing: 0/2 ready"}
	merge := t0.Add(2 * time.Minute)
	Step(l, w.input(c, merge))
	if rb := find(Step(l, w.input(c, merge.Add(3*time.Minute))), Rollback); rb == nil || rb.Failed != dB {
		t.Fatalf("no rollback of B at its deadline: %+v", rb)
	}
	l.RollbackOpened("prod", img, Proposal{PR: 9, Digest: dA, Failed: dB})
	w.proven("prod", dB)
	as := Step(l, w.input(c, merge.Add(3*time.Minute+time.Second)))
	tr := l.Lookup("prod", img)
	if tr.Rollback == nil || tr.Rollback.PR != 9 || l.Held("prod", img, dB) == nil || find(as, Rollback) != nil || find(as, MergePR) != nil && find(as, MergePR).PR != 9 {
		t.Errorf("after B proved past its deadline: rollback %+v, B held %v, actions %v; want the rollback #9 and the hold kept", tr.Rollback, l.Held("prod", img, dB) != nil, kinds(as))
	}
}
