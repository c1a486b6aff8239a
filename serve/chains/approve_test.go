package chains

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/release"
)

// TestJudgeAChainChange: a head that changes the chain's environments
// fails, naming the command that approves it; an approval of another head
// or another pull request does not count, a prefix of a SHA is refused;
// approved at its head, the pull request is judged pin by pin as any is,
// so an approved chain change still cannot carry an unproven digest.
func TestJudgeAChainChange(t *testing.T) {
	const img, good, unproven = "r.example/web", "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	const head, other = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	chain := release.Chain{{Name: "staging", Apps: []string{"web-staging"}}, {Name: "prod", From: "staging", Apps: []string{"web-prod"}}}
	base := map[string]map[string]string{"staging": {img: good}, "prod": {img: good}}
	pins := func(prod string) release.PullHead {
		return release.PullHead{ChainChange: "adds canary", Pinned: map[string]map[string][]string{"staging": {img: {good}}, "prod": {img: {prod}}}}
	}
	l := release.New()
	judge := func(h release.PullHead) (commitstatus.State, string) {
		return Judge(l, chain, base, h, 14, head, now, nil)
	}

	if st, desc := judge(pins(good)); st != commitstatus.Failure || !strings.Contains(desc, "pinbot chain approve 14 --head "+head) {
		t.Errorf("unapproved: %s %q; want a failure naming the command", st, desc)
	}
	if err := ApproveChain(l, 14, head[:12], "alice", "canary", now); err == nil {
		t.Error("an approval of a SHA's prefix was taken")
	}
	for _, a := range []struct {
		pr   int64
		head string
	}{{14, other}, {15, head}} {
		if err := ApproveChain(l, a.pr, a.head, "alice", "another", now); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := judge(pins(good)); st != commitstatus.Failure {
		t.Errorf("approved at another head, or for another pull request: %s; want failure", st)
	}
	if err := ApproveChain(l, 14, head, "alice", "a canary before prod", now); err != nil {
		t.Fatal(err)
	}
	if st, desc := judge(pins(good)); st != commitstatus.Success || !strings.Contains(desc, "approved by alice: a canary before prod") {
		t.Errorf("approved at its head: %s %q; want success naming who approved it", st, desc)
	}
	if st, desc := judge(pins(unproven)); st != commitstatus.Failure || !strings.Contains(desc, "prod") {
		t.Errorf("approved, with an unproven digest in prod: %s %q; want the pin refused", st, desc)
	}
	if n := len(l.ChainApprovals); n != 2 {
		t.Errorf("%d approvals kept, want 2 (one per pull request, the newest)", n)
	}
	if a := l.Audit[len(l.Audit)-1]; a.Reason != release.ReasonChainApproved || a.By != "alice" || a.Why != "a canary before prod" {
		t.Errorf("the audit's last entry: %+v; want alice's approval", a)
	}
}
