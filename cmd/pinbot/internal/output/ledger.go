package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/freeze"
	"pinbot.dev/pinbot/release/store"
)

// RepoLedger is one repository's release ledger, as `pinbot ledger`
// prints it.
type RepoLedger struct {
	Repo   string          `json:"repo"`
	Ledger *release.Ledger `json:"ledger"`
}

// Ledgers prints each repository's release chain: whether it is stopped,
// and per environment and image what is pinned, proven, held and decided.
func Ledgers(w io.Writer, asJSON bool, ls []RepoLedger, now time.Time) error {
	if asJSON {
		out := make([]repoLedgerJSON, len(ls))
		for i, rl := range ls {
			out[i] = repoLedgerJSON{Repo: rl.Repo, Ledger: ledgerJSON{Ledger: rl.Ledger}}
			for _, e := range rl.Ledger.Chain {
				ej := envJSON{Environment: e, Soak: duration(e.Soak), RollbackWindow: duration(e.RollbackWindow), ReadyTimeout: duration(e.ReadyTimeout), UpstreamSoak: duration(e.UpstreamSoak)}
				for _, f := range e.Freeze {
					ej.Freeze = append(ej.Freeze, freezeJSON{Window: f, Duration: duration(f.Duration)})
				}
				out[i].Ledger.Chain = append(out[i].Ledger.Chain, ej)
			}
		}
		return json.NewEncoder(w).Encode(out)
	}
	if len(ls) == 0 {
		_, err := fmt.Fprintln(w, "no ledgers: no repository declares environments, or pinbot serve has not looked yet")
		return err
	}
	for _, rl := range ls {
		fmt.Fprintf(w, "%s\n", rl.Repo)
		if rl.Ledger.Stopped != "" {
			fmt.Fprintf(w, "STOPPED: %s\n", rl.Ledger.Stopped)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENV\tIMAGE\tPINNED\tPROVEN\tSINCE\tPULL REQUEST\tROLLBACK\tFROZEN")
		for _, env := range chainOrder(rl.Ledger) {
			for _, image := range rl.Ledger.Images(env) {
				t := rl.Ledger.Lookup(env, image)
				since, pr, rb, frozen := "-", "-", "-", "-"
				if t.ProvenSince != nil {
					since = t.ProvenSince.UTC().Format(time.RFC3339)
				}
				if p := t.Proposal; p != nil {
					pr = fmt.Sprintf("#%d %s", p.PR, imageref.Short(p.Digest))
					if p.Gate != nil {
						pr += " (" + string(p.Gate.State) + ")"
					}
				}
				if p := t.Rollback; p != nil && p.PR != 0 {
					rb = fmt.Sprintf("#%d to %s", p.PR, imageref.Short(p.Digest))
				} else if p != nil {
					rb = "decided: to " + imageref.Short(p.Digest)
				}
				if t.FrozenUntil != nil && t.FrozenUntil.After(now) {
					frozen = "until " + t.FrozenUntil.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", env, image, orDash(imageref.Short(t.Pinned)), orDash(imageref.Short(t.Proven)), since, pr, rb, frozen)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, h := range rl.Ledger.Holds {
			fmt.Fprintf(w, "held: %s %s@%s since %s: %s\n", h.Env, h.Image, imageref.Short(h.Digest), h.Since.UTC().Format(time.RFC3339), h.Reason)
		}
	}
	return nil
}

// chainOrder is l's environments in the order of its chain (staging
// before prod), then any the chain no longer declares, by name.
func chainOrder(l *release.Ledger) []string {
	var envs, rest []string
	for _, e := range l.Chain {
		if l.Envs[e.Name] != nil {
			envs = append(envs, e.Name)
		}
	}
	for env := range l.Envs {
		if !slices.Contains(envs, env) {
			rest = append(rest, env)
		}
	}
	sort.Strings(rest)
	return append(envs, rest...)
}

// Holds prints the held digests: under asJSON a list of store.RepoHold,
// else a table.
func Holds(w io.Writer, asJSON bool, holds []store.RepoHold) error {
	if asJSON {
		return json.NewEncoder(w).Encode(holds)
	}
	if len(holds) == 0 {
		_, err := fmt.Fprintln(w, "no digest is held")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPO\tENV\tIMAGE\tDIGEST\tSINCE\tWHY")
	for _, h := range holds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Repo, h.Env, h.Image, h.Digest, h.Since.UTC().Format(time.RFC3339), h.Reason)
	}
	return tw.Flush()
}

// AuditEntry is one thing a person did, in a repository's ledger.
type AuditEntry struct {
	Repo string `json:"repo"`
	release.Event
}

// Audit prints what people did, oldest first, per repository: when, the
// environment, who, what and why.
func Audit(w io.Writer, asJSON bool, ls []RepoLedger) error {
	var all []AuditEntry
	for _, rl := range ls {
		for _, e := range rl.Ledger.Audit {
			all = append(all, AuditEntry{Repo: rl.Repo, Event: e})
		}
	}
	if asJSON {
		if all == nil {
			all = []AuditEntry{}
		}
		return json.NewEncoder(w).Encode(all)
	}
	if len(all) == 0 {
		_, err := fmt.Fprintln(w, "nobody has acted on a ledger yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tREPOSITORY\tENV\tWHO\tWHAT\tWHY")
	for _, e := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339), e.Repo, orDash(e.Env), e.By, e.Reason, e.Why)
	}
	return tw.Flush()
}

// Writers prints who may change the ledgers: with the key first, whose
// writes pinbot trusts.
func Writers(w io.Writer, asJSON bool, ws []store.Writer) error {
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Key && !ws[j].Key })
	if asJSON {
		if ws == nil {
			ws = []store.Writer{}
		}
		return json.NewEncoder(w).Encode(ws)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT\tKEY\tBOUND BY")
	for _, x := range ws {
		key := "no: pinbot refuses and restores its writes"
		if x.Key {
			key = "yes: may lift a hold unseen"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", x.Subject, key, strings.Join(x.Bindings, ", "))
	}
	return tw.Flush()
}

// repoLedgerJSON is a RepoLedger as -o json prints it: its chain's
// durations as Go writes them ("24h0m0s"), not in nanoseconds.
type repoLedgerJSON struct {
	Repo   string     `json:"repo"`
	Ledger ledgerJSON `json:"ledger"`
}

type ledgerJSON struct {
	*release.Ledger
	Chain []envJSON `json:"chain,omitempty"`
}

type envJSON struct {
	release.Environment
	Soak           duration     `json:"soak,omitempty"`
	RollbackWindow duration     `json:"rollbackWindow,omitempty"`
	ReadyTimeout   duration     `json:"readyTimeout,omitempty"`
	UpstreamSoak   duration     `json:"upstreamSoak,omitempty"`
	Freeze         []freezeJSON `json:"freeze,omitempty"`
}

type freezeJSON struct {
	freeze.Window
	Duration duration `json:"duration"`
}

// duration is a time.Duration that JSON writes as "1h30m0s".
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
