package release

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/trust/proven"
)

const (
	web = "gitea.example/acme/web"
	api = "gitea.example/acme/api"
)

// pair is what Git pins and the environments show of web and api.
type pair struct {
	pinned map[string]map[string]string     // env, image: digest
	obs    map[string]map[string]Assessment // env, image
}

func newPair() *pair {
	return &pair{pinned: map[string]map[string]string{}, obs: map[string]map[string]Assessment{}}
}

func (p *pair) set(env, image, digest string, proven bool) {
	if p.pinned[env] == nil {
		p.pinned[env], p.obs[env] = map[string]string{}, map[string]Assessment{}
	}
	p.pinned[env][image] = digest
	o := Assessment{Image: image, Digest: digest, Proven: proven, Why: "pod " + env + "/x is not Ready"}
	if proven {
		o.Why, o.Pods = "", []Pod{{App: env, Namespace: env, Pod: "x", Container: "app", Running: digest, Verdict: "Verified", Ready: true}}
	}
	p.obs[env][image] = o
}

func (p *pair) input(c Chain, at time.Duration) Input {
	return Input{Now: t0.Add(at), Chain: c, Pinned: p.pinned, Assessed: p.obs}
}

// onA is grouped's chain with web and api pinned and proven at A in both
// environments, after the ledger's first look.
func onA() (Chain, *Ledger, *pair) {
	c, l, p := grouped(), New(), newPair()
	for _, env := range []string{"staging", "prod"} {
		p.set(env, web, dA, true)
		p.set(env, api, dA, true)
	}
	Step(l, p.input(c, 0))
	return c, l, p
}

func grouped() Chain {
	c := Chain{
		{Name: "staging", Paths: []string{"staging/**"}, Apps: []string{"staging"}, Soak: 10 * time.Minute},
		{Name: "prod", From: "staging", Paths: []string{"prod/**"}, Apps: []string{"prod"}, ReadyTimeout: 2 * time.Minute,
			AutoMerge: true, Rollback: RollbackAuto, Together: [][]string{{"web", "api"}}},
	}
	c.Defaults()
	return c
}

// TestGroupMovesAsOne: prod takes web and api together. Once staging
// proves both, the set staging runs is proposed in one pull request (web
// moved, api as it was), and again when api moves too; the gate is the
// worst member's, so it waits for the soak of the last to prove, and the
// pull request merges once.
func TestGroupMovesAsOne(t *testing.T) {
	c, l, p := onA()
	p.set("staging", web, dB, true)
	as := Step(l, p.input(c, time.Minute))
	if n := countKind(as, Promote); n != 1 {
		t.Fatalf("web proven in staging: %d promotions %+v, want one of the group", n, as)
	}
	a := find(as, Promote)
	want := []Member{{Image: api, Digest: dA}, {Image: web, Digest: dB}}
	if a.Group != "web+api" || a.Env != "prod" || !sameMembers(a.Members, want) || a.Members[1].Proof == nil || a.Members[1].Proof.Env != "staging" {
		t.Fatalf("promotion %+v, want web+api into prod with %v and each member's proof", a, want)
	}
	record := func(as []Action, pr int64, head string) {
		for _, a := range as {
			switch a.Kind {
			case Promote:
				for _, m := range a.Members {
					l.Proposed(a.Env, m.Image, Proposal{PR: pr, Digest: m.Digest, Head: head, From: a.From, Group: a.Group})
				}
			case Gate:
				for _, m := range a.Members {
					l.Posted(a.Env, m.Image, a.PR, a.State, a.Description)
				}
			}
		}
	}
	record(as, 7, "h1")
	// api moves in staging two minutes later: the set changes.
	p.set("staging", api, dB, true)
	as = Step(l, p.input(c, 3*time.Minute))
	if a := find(as, Promote); a == nil || !sameMembers(a.Members, []Member{{Image: api, Digest: dB}, {Image: web, Digest: dB}}) {
		t.Fatalf("api proven too: %+v, want the group updated to both at B", as)
	}
	record(as, 7, "h2")
	if g := GroupProven(l, c, "staging", web); g == nil || g.Name != "web+api" || len(g.Members) != 2 || g.Members[0] != (proven.Member{Image: api, Digest: dB}) || g.Members[1] != (proven.Member{Image: web, Digest: dB}) {
		t.Errorf("GroupProven = %+v, want both proven at B in staging", g)
	}
	if g := GroupProven(l, c, "prod", web); g != nil {
		t.Errorf("GroupProven in prod, which no environment comes from: %+v", g)
	}
	as = Step(l, p.input(c, 5*time.Minute))
	g := find(as, Gate)
	if g == nil || g.State != commitstatus.Pending || g.Description != "api: proven in staging, soaking until 2026-12-02T12:13:00Z" || len(g.Members) != 2 || g.Head != "h2" {
		t.Fatalf("during the soak: gate %+v, want pending until api's soak ends (+13m), for both", g)
	}
	record(as, 7, "h2")
	if as := Step(l, p.input(c, 12*time.Minute)); find(as, MergePR) != nil || find(as, Promote) != nil {
		t.Fatalf("+12m, web soaked, api not: %+v, want nothing merged", as)
	}
	as = Step(l, p.input(c, 14*time.Minute))
	if g := find(as, Gate); g == nil || g.State != commitstatus.Success || g.Description != "api, web proven together in staging" {
		t.Fatalf("both soaked: gate %+v, want success", g)
	}
	if n := countKind(as, MergePR); n != 1 || find(as, MergePR).PR != 7 {
		t.Errorf("both soaked: %d merges %+v, want #7 merged once", n, as)
	}
}

// TestGroupRollsBackAsOne: web and api merge into prod together; api
// never proves. At the deadline both are held in prod and go back to the
// digests proven there before, in one rollback pull request, which
// auto-merges once; no rollback branch is readied member by member. A
// leader that stops before the pull request opens leaves one pending
// rollback of the set.
func TestGroupRollsBackAsOne(t *testing.T) {
	c, l, p := onA()
	p.set("staging", web, dB, true)
	p.set("staging", api, dB, true)
	Step(l, p.input(c, time.Minute))
	// The group's pull request merges at +20m: web proves, api never does.
	p.set("prod", web, dB, true)
	p.set("prod", api, dB, false)
	as := Step(l, p.input(c, 20*time.Minute))
	if find(as, ReadyRollback) != nil {
		t.Errorf("a group member's rollback readied: %+v", as)
	}
	as = Step(l, p.input(c, 22*time.Minute))
	if n := countKind(as, Rollback); n != 1 {
		t.Fatalf("api failed at the deadline: %d rollbacks %+v, want one of the set", n, as)
	}
	rb := find(as, Rollback)
	want := []Member{{Image: api, Digest: dA, Failed: dB}, {Image: web, Digest: dA, Failed: dB}}
	if rb.Group != "web+api" || !sameMembers(rb.Members, want) {
		t.Fatalf("rollback %+v, want both back to A", rb)
	}
	for _, im := range []string{web, api} {
		if l.Held("prod", im, dB) == nil {
			t.Errorf("%s@B not held in prod: %+v", im, l.Holds)
		}
	}
	if h := l.Held("prod", web, dB); h == nil || !strings.Contains(h.Reason, "rolled back with its group web+api") {
		t.Errorf("web's hold %+v, want it to name the group", h)
	}
	if pend := Pending(l, nil); len(pend) != 1 || !sameMembers(pend[0].Members, want) {
		t.Errorf("a leader that stopped before the pull request: pending %+v, want the set's one rollback", pend)
	}
	for _, m := range rb.Members {
		l.RollbackOpened("prod", m.Image, Proposal{PR: 9, Digest: m.Digest, Head: "r1", Failed: m.Failed, Group: rb.Group})
	}
	as = Step(l, p.input(c, 23*time.Minute))
	if n := countKind(as, MergePR); n != 1 || find(as, MergePR).PR != 9 || !find(as, MergePR).IsRollback {
		t.Errorf("the rollback opened, auto: %d merges %+v, want #9 once", n, as)
	}
	if pend := Pending(l, nil); len(pend) != 0 {
		t.Errorf("pending after the pull request opened: %+v", pend)
	}
}

func TestValidateTogether(t *testing.T) {
	c := grouped()
	c[1].Together = [][]string{{"web"}, {"api", "web"}, {"api", "db"}, {"a b", "c"}}
	probs := c.Validate(func(string) bool { return true }, func(string) error { return nil })
	var got []string
	for _, p := range probs {
		got = append(got, p.Msg)
	}
	for _, want := range []string{`a group of images needs two or more, not ["web"]`, `"api" is in two groups`, `group member "a b": want an image repository`} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, want) }) {
			t.Errorf("problems %q, want one with %q", got, want)
		}
	}
}

func countKind(as []Action, k Kind) int {
	n := 0
	for _, a := range as {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// sameMembers compares members by image, digest and failed digest.
func sameMembers(got, want []Member) bool {
	type m struct{ Image, Digest, Failed string }
	var g, w []m
	for _, x := range got {
		g = append(g, m{x.Image, x.Digest, x.Failed})
	}
	for _, x := range want {
		w = append(w, m{x.Image, x.Digest, x.Failed})
	}
	return cmp.Equal(g, w)
}
