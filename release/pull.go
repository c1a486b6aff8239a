package release

import (
	"errors"
	"fmt"
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

// JudgePull is the pinbot/gate status of a pull request that is not one
// of pinbot's own (whose gate Step keeps): each pin it changes in an
// environment (head's digest where the base pins another) is judged by
// Admit, without force. The first refusal fails it, naming the rule,
// environment, image and digest (a digest still soaking upstream leaves it
// pending: that ends by itself); a pull request that changes no pin of
// the chain, or only admissible ones, succeeds. attested reads the
// attestation an admission requires (Environment.RequireAttestation).
func JudgePull(l *Ledger, chain Chain, base, head map[string]map[string]string, now time.Time, attested AttestationOf) (state commitstatus.State, description string) {
	var admitted []string
	envs := make([]string, 0, len(head))
	for env := range head {
		envs = append(envs, env)
	}
	sort.Strings(envs)
	for _, env := range envs {
		if _, ok := chain.Get(env); !ok {
			continue
		}
		images := make([]string, 0, len(head[env]))
		for image := range head[env] {
			images = append(images, image)
		}
		sort.Strings(images)
		for _, image := range images {
			digest := head[env][image]
			if digest == "" || digest == base[env][image] {
				continue
			}
			a, _ := chain.Admission(env, image, digest)
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
			admitted = append(admitted, env+": "+imageref.Short(digest))
		}
	}
	if len(admitted) == 0 {
		return commitstatus.Success, "changes no pin of the release chain"
	}
	return commitstatus.Success, fmt.Sprintf("admitted (%s)", strings.Join(admitted, ", "))
}
