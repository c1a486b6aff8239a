package output

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release"
)

// TestLedgerSaysWhyTheChainStopped: pinbot ledger leads a stopped chain
// with why, and shows a rollback decided but not yet opened.
func TestLedgerSaysWhyTheChainStopped(t *testing.T) {
	l := release.New()
	l.Stopped = "the chain is stopped: .pinbot.yaml no longer declares the environment of these holds"
	l.Track("prod", "r.example/web").Rollback = &release.Proposal{Digest: "sha256:" + strings.Repeat("a", 64), Failed: "sha256:" + strings.Repeat("b", 64)}
	var b strings.Builder
	if err := Ledgers(&b, false, []RepoLedger{{Repo: "acme/manifests", Ledger: l}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"STOPPED: the chain is stopped", "decided: to sha256:aaaaaaaaaaaa"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("ledger output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestLedgerFollowsTheChain: environments are listed in the chain's
// order, staging before prod, not by name.
func TestLedgerFollowsTheChain(t *testing.T) {
	l := release.New()
	l.Chain = release.Chain{{Name: "staging"}, {Name: "prod", From: "staging"}}
	l.Track("prod", "r.example/web").Pinned = "sha256:" + strings.Repeat("b", 64)
	l.Track("staging", "r.example/web").Pinned = "sha256:" + strings.Repeat("c", 64)
	l.Track("old", "r.example/web").Pinned = "sha256:" + strings.Repeat("d", 64)
	var b strings.Builder
	if err := Ledgers(&b, false, []RepoLedger{{Repo: "acme/manifests", Ledger: l}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	s, p, o := strings.Index(out, "\nstaging "), strings.Index(out, "\nprod "), strings.Index(out, "\nold ")
	if s < 0 || p < 0 || o < 0 || !(s < p && p < o) {
		t.Errorf("ledger rows, want staging, prod, then old:\n%s", out)
	}
}
