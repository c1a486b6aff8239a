package output

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/freeze"
	"pinbot.dev/pinbot/release/store"
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

// TestAuditSaysWhoDidWhatAndWhy: --audit lists what people did across
// repositories, with who and why, and none of pinbot's own decisions;
// as JSON, each entry names its repository.
func TestAuditSaysWhoDidWhatAndWhy(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	l := release.New()
	l.Log(now, "staging", "acme/web", release.ReasonProven, "proven")
	l.PauseBy("prod", "olga", "incident 42", now.Add(time.Minute))
	l.ReleaseBy("prod", "acme/web", "sha256:aaaa", "vic", "fixed behind a flag", now.Add(2*time.Minute))
	var b strings.Builder
	if err := Audit(&b, false, []RepoLedger{{Repo: "acme/manifests", Ledger: l}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "acme/manifests  prod  olga  ChainPaused  incident 42") || strings.Contains(out, "Proven") {
		t.Errorf("the audit:\n%s", out)
	}
	b.Reset()
	l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: "acme/web", Digest: "sha256:bbbb"})
	l.ReleaseBy("prod", "acme/web", "sha256:bbbb", "vic", "fixed behind a flag", now.Add(3*time.Minute))
	if err := Audit(&b, true, []RepoLedger{{Repo: "acme/manifests", Ledger: l}}); err != nil {
		t.Fatal(err)
	}
	var got []AuditEntry
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Repo != "acme/manifests" || got[1].By != "vic" || got[1].Why != "fixed behind a flag" || got[1].Reason != release.ReasonHoldLifted {
		t.Errorf("the audit as JSON: %+v", got)
	}
}

// TestWritersKeyFirst: pinbot ledger --writers lists who may write a
// ledger pinbot trusts (the key) first, then who may only tamper.
func TestWritersKeyFirst(t *testing.T) {
	var b strings.Builder
	ws := []store.Writer{{Subject: "User mallory", Bindings: []string{"RoleBinding pinbot-system/mallory"}}, {Subject: "Group system:masters", Bindings: []string{"ClusterRoleBinding cluster-admin"}, Key: true}}
	if err := Writers(&b, false, ws); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "Group system:masters  yes: may lift a hold unseen") || !strings.HasPrefix(lines[2], "User mallory") || !strings.Contains(lines[2], "no: pinbot refuses") {
		t.Errorf("pinbot ledger --writers:\n%s", b.String())
	}
}

// TestLedgerJSONWritesDurations: -o json writes the chain's durations as
// "24h0m0s", as .pinbot.yaml does, not in nanoseconds; the rest of the
// ledger is as stored.
func TestLedgerJSONWritesDurations(t *testing.T) {
	l := release.New()
	l.Chain = release.Chain{{Name: "staging", Soak: 24 * time.Hour, ReadyTimeout: 90 * time.Second,
		Freeze: []freeze.Window{{Start: "0 18 * * 5", Duration: 63 * time.Hour}}}, {Name: "prod", From: "staging"}}
	l.Track("staging", "r.example/web").Pinned = "sha256:" + strings.Repeat("c", 64)
	var b strings.Builder
	if err := Ledgers(&b, true, []RepoLedger{{Repo: "acme/manifests", Ledger: l}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Repo   string `json:"repo"`
		Ledger struct {
			Chain []map[string]any                      `json:"chain"`
			Envs  map[string]map[string]json.RawMessage `json:"envs"`
		} `json:"ledger"`
	}
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("%s\n%s", err, b.String())
	}
	staging := got[0].Ledger.Chain[0]
	freeze, _ := staging["freeze"].([]any)
	if staging["soak"] != "24h0m0s" || staging["readyTimeout"] != "1m30s" || len(freeze) != 1 || freeze[0].(map[string]any)["duration"] != "63h0m0s" ||
		got[0].Ledger.Chain[1]["soak"] != nil || got[0].Ledger.Envs["staging"]["r.example/web"] == nil {
		t.Errorf("ledger -o json:\n%s", b.String())
	}
}
