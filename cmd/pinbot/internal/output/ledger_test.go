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
