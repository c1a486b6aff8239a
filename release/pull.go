package release

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/trust/proven"
)

// PullContext is the commit status every pull request into a repository
// with a release chain gets: branch protection that requires it makes the
// gate binding for everyone, people and other bots included.
const PullContext = "pinbot/gate"

// AttestationOf reads what the attestations of a's digest say of a's
// upstream; nil when none could be read.
type AttestationOf func(a Admission) *proven.Attested

func (f AttestationOf) of(a Admission) *proven.Attested {
	if f == nil {
		return nil
	}
	return f(a)
}

// PullHead is what a pull request's head would pin in the chain, read
// with the base's .pinbot.yaml: a head is never judged by rules it brings
// itself.
type PullHead struct {
	// Pinned is every digest the head pins, by environment and image.
	Pinned map[string]map[string][]string
	// Loose names, by environment, the pins of the head that no digest
	// rule judges (an ignore marker) and the base lacks.
	Loose map[string][]string
	// ChainChange says how the head's .pinbot.yaml changes the chain's
	// environments (ChainChange); "" when it leaves them as they are.
	ChainChange string
}

// JudgePull is the pinbot/gate status of a pull request that is not one
// of pinbot's own (whose gate Step keeps). A head that changes the
// chain's environments fails: it would move pins out of the rules that
// judge them. So does one that adds, in an environment of the chain, a pin
// no rule can judge. Then each digest the head pins in an environment
// that the base does not pin there is judged by Admit, without force,
// every pin on its own (a majority of pins hides none). The first refusal
// fails it, naming the rule, environment, image and digest (a digest still
// soaking upstream leaves it pending: that ends by itself); a pull request
// that changes no pin of the chain, or only admissible ones, succeeds.
// attested reads the attestation an admission requires
// (Environment.RequireAttestation).
func JudgePull(l *Ledger, chain Chain, base map[string]map[string]string, head PullHead, now time.Time, attested AttestationOf) (state commitstatus.State, description string) {
	if head.ChainChange != "" {
		return commitstatus.Failure, "changes the release chain: " + head.ChainChange + "; pinbot judges every pull request by the base's .pinbot.yaml, " +
			"so this one merges only past the gate"
	}
	var admitted []string
	for _, env := range chain {
		if loose := head.Loose[env.Name]; len(loose) > 0 {
			return commitstatus.Failure, fmt.Sprintf("in %s, %s: the gate judges digests, so a pin without one cannot go in", env.Name, strings.Join(loose, "; "))
		}
		images := make([]string, 0, len(head.Pinned[env.Name]))
		for image := range head.Pinned[env.Name] {
			images = append(images, image)
		}
		sort.Strings(images)
		for _, image := range images {
			for _, digest := range head.Pinned[env.Name][image] {
				if digest == "" || digest == base[env.Name][image] {
					continue
				}
				a, _ := chain.Admission(env.Name, image, digest)
				if a.RequireAttestation {
					a.Attested = attested.of(a)
				}
				if err := Admit(a, FactsFrom(l, a, now)); err != nil {
					// A soak ends by itself: the gate waits for it.
					if r := (*Refusal)(nil); errors.As(err, &r) && r.Rule == RuleSoaking {
						return commitstatus.Pending, err.Error()
					}
					return commitstatus.Failure, err.Error()
				}
				admitted = append(admitted, env.Name+": "+imageref.Short(digest))
			}
		}
	}
	if len(admitted) == 0 {
		return commitstatus.Success, "changes no pin of the release chain"
	}
	return commitstatus.Success, fmt.Sprintf("admitted (%s)", strings.Join(admitted, ", "))
}

// ChainChange says how head's environments differ from base's: the
// environments added or removed, else the first whose settings changed;
// "" when they are the same.
func ChainChange(base, head Chain) string {
	var added, removed []string
	for _, e := range head {
		if _, ok := base.Get(e.Name); !ok {
			added = append(added, e.Name)
		}
	}
	for _, e := range base {
		if _, ok := head.Get(e.Name); !ok {
			removed = append(removed, e.Name)
		}
	}
	var out []string
	if len(added) > 0 {
		out = append(out, "adds "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		out = append(out, "removes "+strings.Join(removed, ", "))
	}
	if len(out) > 0 {
		return strings.Join(out, " and ")
	}
	for i := range base {
		if !reflect.DeepEqual(base[i], head[i]) {
			return "changes the settings of " + base[i].Name
		}
	}
	return ""
}
