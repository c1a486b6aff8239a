package dashboard

import (
	"context"
	"sort"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// Ledger is one manifest repository's release ledger (package release).
type Ledger struct {
	Repo   string
	Chain  release.Chain // nil when not known here: the ledger's environments, by name
	Ledger *release.Ledger
}

// LedgerSource is a Source that also has release ledgers: the dashboard
// then serves /ledger.
type LedgerSource interface {
	Ledgers(ctx context.Context) ([]Ledger, error)
}

// LedgerView is the ledger page: which digest runs where.
type LedgerView struct {
	Repos []RepoLedgerView
}

// RepoLedgerView is one repository's ledger.
type RepoLedgerView struct {
	Repo   string
	Rows   []LedgerRow
	Holds  []HoldView
	Events []EventView
}

// LedgerRow is one image in one environment.
type LedgerRow struct {
	Env, Image     string
	Pinned, Proven string
	ProvenSince    string
	Soak           string // remaining, or "soaked"
	Why            string
	Proposal       string // "#12 sha256:… (gate: success: …)"
	Rollback       string
	Frozen         string
	ProvenClass    string
}

// HoldView is one hold.
type HoldView struct{ Env, Image, Digest, Since, Reason, From string }

// EventView is one event.
type EventView struct{ At, Env, Image, What string }

// BuildLedger is the ledger page of ledgers at now.
func BuildLedger(ledgers []Ledger, now time.Time, refresh time.Duration) Page {
	var v LedgerView
	for _, lg := range ledgers {
		rv := RepoLedgerView{Repo: lg.Repo}
		l := lg.Ledger
		envs := envOrder(lg)
		for _, env := range envs {
			var soak time.Duration
			if e, ok := lg.Chain.Get(env); ok {
				soak = e.Soak
			}
			for _, image := range l.Images(env) {
				t := l.Lookup(env, image)
				row := LedgerRow{Env: env, Image: image, Pinned: imageref.Short(t.Pinned), Proven: imageref.Short(t.Proven), Why: t.Why, ProvenClass: "warn"}
				if t.Proven != "" {
					row.ProvenClass = "ok"
				}
				if t.ProvenSince != nil {
					row.ProvenSince = t.ProvenSince.UTC().Format(time.RFC3339)
					if held, ok := t.Soaked(now, soak); ok {
						row.Soak = "soaked"
					} else {
						row.Soak = (soak - held).Round(time.Second).String() + " to go"
					}
				}
				if p := t.Proposal; p != nil {
					row.Proposal = "#" + itoa(p.PR) + " " + imageref.Short(p.Digest)
					if g := p.Gate; g != nil {
						row.Proposal += " (gate " + string(g.State) + ": " + g.Description + ")"
					}
				}
				if p := t.Rollback; p != nil {
					row.Rollback = "#" + itoa(p.PR) + " to " + imageref.Short(p.Digest) + " from " + imageref.Short(p.Failed)
				}
				if t.FrozenUntil != nil && t.FrozenUntil.After(now) {
					row.Frozen = "until " + t.FrozenUntil.UTC().Format(time.RFC3339)
				}
				rv.Rows = append(rv.Rows, row)
			}
		}
		for _, h := range l.Holds {
			rv.Holds = append(rv.Holds, HoldView{Env: h.Env, Image: h.Image, Digest: imageref.Short(h.Digest), Since: h.Since.UTC().Format(time.RFC3339), Reason: h.Reason, From: h.From})
		}
		for i := len(l.Events) - 1; i >= 0 && len(rv.Events) < 20; i-- {
			e := l.Events[i]
			rv.Events = append(rv.Events, EventView{At: e.At.UTC().Format(time.RFC3339), Env: e.Env, Image: e.Image, What: e.What})
		}
		v.Repos = append(v.Repos, rv)
	}
	return Page{Title: "pinbot: ledger", Refresh: int(refresh / time.Second), Generated: now.UTC().Format(time.RFC3339), Ledger: &v}
}

// envOrder is the chain's order where known, else the ledger's names.
func envOrder(lg Ledger) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range lg.Chain {
		if lg.Ledger.Envs[e.Name] != nil {
			out = append(out, e.Name)
			seen[e.Name] = true
		}
	}
	var rest []string
	for env := range lg.Ledger.Envs {
		if !seen[env] {
			rest = append(rest, env)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func itoa(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{digits[n%10]}, b...)
	}
	return string(b)
}
