package promote

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"pinbot.dev/pinbot/internal/imageref"
)

// Inventory is what the base branch of a manifest repository pins: its
// config, the commit read, and for each target (environment) and image
// the digest its pins hold.
type Inventory struct {
	Config Config
	Commit string
	// Pinned maps target and image to the digest pinned there. When the
	// target's pins of the image hold several (an index and a platform
	// child, say), the one most pins hold is taken.
	Pinned map[string]map[string]string
	// Tags maps target and image to the tag the pins of Pinned's digest
	// carry (the one most of them carry), "" when none does.
	Tags map[string]map[string]string
	// Every maps target and image to every digest pinned there, sorted:
	// what a gate judges, pin by pin, where Pinned keeps the majority.
	Every map[string]map[string][]string
	// Loose names, by target, the pins no digest rule judges: those
	// marked "# pinbot: ignore" ("FILE: IMAGE marked ..."), sorted.
	Loose map[string][]string
	// Tagged names, by target, the references by tag alone ("FILE:
	// IMAGE:TAG by tag alone"), sorted; only ReadInventoryUnder reads
	// them (see pins.WithTagReferences).
	Tagged map[string][]string
}

// ReadInventory fetches the base of env's repository and reads what it
// pins.
func ReadInventory(ctx context.Context, env Env) (*Inventory, error) {
	return ReadInventoryUnder(ctx, env, nil)
}

// ReadInventoryUnder is ReadInventory with the files sorted into targets
// by rules, another commit's config, rather than by the fetched commit's
// own: a pull request's head is read with its base's .pinbot.yaml, so
// that a head cannot move a pin out of an environment by editing it.
// Config is still the fetched commit's own; nil rules are it.
func ReadInventoryUnder(ctx context.Context, env Env, rules *Config) (*Inventory, error) {
	s, err := openFrom(ctx, &env, nil, rules != nil)
	if err != nil {
		return nil, err
	}
	if rules == nil {
		rules = &s.cfg
	}
	inv := &Inventory{Config: s.cfg, Commit: s.snap.Commit(), Pinned: map[string]map[string]string{}, Tags: map[string]map[string]string{},
		Every: map[string]map[string][]string{}, Loose: map[string][]string{}, Tagged: map[string][]string{}}
	counts := map[string]map[string]map[string]int{}
	tags := map[[3]string]map[string]int{} // target, image, digest -> tag counts
	for _, p := range s.pins {
		target := rules.TargetOf(p.File)
		switch {
		case target == "":
			continue
		case p.Ignored:
			inv.Loose[target] = append(inv.Loose[target], fmt.Sprintf("%s: %s marked \"pinbot: ignore\"", p.File, p.Image))
			continue
		case p.Digest == "":
			inv.Tagged[target] = append(inv.Tagged[target], fmt.Sprintf("%s: %s by tag alone", p.File, imageref.Ref{Repository: p.Image, Tag: p.Tag}))
			continue
		}
		if counts[target] == nil {
			counts[target] = map[string]map[string]int{}
		}
		if counts[target][p.Image] == nil {
			counts[target][p.Image] = map[string]int{}
		}
		counts[target][p.Image][p.Digest]++
		if p.Tag != "" {
			k := [3]string{target, p.Image, p.Digest}
			if tags[k] == nil {
				tags[k] = map[string]int{}
			}
			tags[k][p.Tag]++
		}
	}
	for _, named := range []map[string][]string{inv.Loose, inv.Tagged} {
		for target, loose := range named {
			slices.Sort(loose)
			named[target] = slices.Compact(loose)
		}
	}
	for target, images := range counts {
		inv.Pinned[target] = map[string]string{}
		inv.Tags[target] = map[string]string{}
		inv.Every[target] = map[string][]string{}
		for image, digests := range images {
			var best []string
			for d := range digests {
				best = append(best, d)
			}
			inv.Every[target][image] = slices.Sorted(slices.Values(best))
			sort.Slice(best, func(i, j int) bool {
				if digests[best[i]] != digests[best[j]] {
					return digests[best[i]] > digests[best[j]]
				}
				return best[i] < best[j]
			})
			inv.Pinned[target][image] = best[0]
			inv.Tags[target][image] = mostCommon(tags[[3]string{target, image, best[0]}])
		}
	}
	return inv, nil
}

// mostCommon is the key counted most, the least in order on a tie; "" for
// none.
func mostCommon(counts map[string]int) string {
	best := ""
	for k, n := range counts {
		if best == "" || n > counts[best] || n == counts[best] && k < best {
			best = k
		}
	}
	return best
}
