package release

import (
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
)

// A ledger an earlier release kept, with snake_case keys, still reads: an
// upgrade keeps what was proven, the holds and the rollback targets.
func TestParseLedgerWrittenBeforeCamelCase(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)
	l, err := Parse([]byte(`{"envs":{"prod":{"reg/app":{"pinned":"sha256:b","pinned_at":"2026-11-30T09:15:00Z",
		"proven_since":"2026-11-30T09:15:00Z","last_proven":"sha256:b","prev_proven":"sha256:a",
		"merged":{"digest":"sha256:b","at":"2026-11-30T09:15:00Z","failing_since":"2026-11-30T09:15:00Z"}}}},
		"holds":[{"env":"prod","image":"reg/app","digest":"sha256:c","reason":"r","since":"2026-11-30T09:15:00Z","from":"staging","rolled_back_to":"sha256:b"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tr := l.Envs["prod"]["reg/app"]
	if tr == nil {
		t.Fatal("the prod track of reg/app is missing")
	}
	switch {
	case !tr.PinnedAt.Equal(at), tr.ProvenSince == nil || !tr.ProvenSince.Equal(at):
		t.Errorf("PinnedAt %v, ProvenSince %v: want both %v", tr.PinnedAt, tr.ProvenSince, at)
	case tr.LastProven != "sha256:b" || tr.PrevProven != "sha256:a":
		t.Errorf("LastProven %q, PrevProven %q: want sha256:b, sha256:a", tr.LastProven, tr.PrevProven)
	case tr.Merged == nil || tr.Merged.FailingSince == nil:
		t.Errorf("Merged %+v: want its FailingSince", tr.Merged)
	}
	if len(l.Holds) != 1 || l.Holds[0].RolledBackTo != "sha256:b" {
		t.Errorf("Holds = %+v, want one with RolledBackTo sha256:b", l.Holds)
	}
}

// A proposal's gate that an earlier release kept as "state: description"
// reads as its state and description, and is written back as both.
func TestParseGatePostedAsOneString(t *testing.T) {
	l, err := Parse([]byte(`{"envs":{"prod":{"reg/app":{"proposal":{"pr":7,"digest":"sha256:b","gate":"pending: proven in staging, soaking until 2026-12-04T10:00:00Z"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := l.Lookup("prod", "reg/app").Proposal
	want := PostedGate{State: commitstatus.Pending, Description: "proven in staging, soaking until 2026-12-04T10:00:00Z"}
	if p == nil || p.Gate == nil || *p.Gate != want {
		t.Fatalf("proposal %+v; want its gate %+v", p, want)
	}
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(data)
	if err != nil || *again.Lookup("prod", "reg/app").Proposal.Gate != want {
		t.Errorf("written and read back: %s, %v", data, err)
	}
}
