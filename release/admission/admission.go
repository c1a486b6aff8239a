// Package admission decides whether the cluster may run a container
// image in an environment of a release chain: the rule serve's validating
// admission webhook applies to each Pod and workload created or changed
// in an environment's namespaces, so that the gate that guards Git also
// guards the cluster (kubectl set image included).
//
// Git is what the gate let through, so the digest an environment pins is
// admitted; so are the digests it proved before (an old revision's Pods
// during a rollout, the digest a rollback returns to) and, in an
// environment that comes from another, the digests proven upstream. A
// digest held in the environment never is, nor an image without a
// digest. It reads a ledger and speaks to nothing.
package admission

import (
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// Rules a refusal names.
const (
	// RuleNotPinned: the image names no digest (or no valid image).
	RuleNotPinned = "not-pinned"
	// RuleHeld: the digest is held in the environment.
	RuleHeld = release.RuleHeld
	// RuleNotProven: neither pinned nor proven in the environment, nor
	// proven in the one it comes from.
	RuleNotProven = release.RuleNotProven
)

// Refusal is a container image the environment does not admit.
type Refusal struct {
	Container string `json:"container"`
	Image     string `json:"image"`
	Env       string `json:"env"`
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
}

// Error implements error.
func (r *Refusal) Error() string {
	return fmt.Sprintf("container %s: %s is refused in %s (%s): %s", r.Container, clip.QuoteRef(r.Image), r.Env, r.Rule, r.Reason)
}

// Judge judges image, as container's spec names it, in env of the chain
// whose ledger is l: nil when admitted.
func Judge(l *release.Ledger, chain release.Chain, env, container, image string) *Refusal {
	refuse := func(rule, format string, args ...any) *Refusal {
		return &Refusal{Container: container, Image: image, Env: env, Rule: rule, Reason: fmt.Sprintf(format, args...)}
	}
	ref, err := imageref.Parse(image)
	if err != nil {
		return refuse(RuleNotPinned, "%s", err)
	}
	if ref.Digest == "" {
		return refuse(RuleNotPinned, "it is not pinned by digest: %s admits only a digest it can check against its ledger", env)
	}
	if h := l.Held(env, ref.Repository, ref.Digest); h != nil {
		return refuse(RuleHeld, "%s is held there since %s: %s", imageref.Short(ref.Digest), h.Since.UTC().Format(time.RFC3339), h.Reason)
	}
	// A digest names content, whatever repository spells it: a copy of a
	// held image in another repository, or another spelling of its
	// registry (localhost:PORT for the registry's Service), is held too.
	for _, h := range l.Holds {
		if h.Env == env && h.Digest == ref.Digest {
			return refuse(RuleHeld, "%s is held there as %s since %s: %s", imageref.Short(ref.Digest), clip.QuoteRef(h.Image), h.Since.UTC().Format(time.RFC3339), h.Reason)
		}
	}
	t := l.Lookup(env, ref.Repository)
	if t == nil {
		return nil // an image the chain does not track there
	}
	if ref.Digest == t.Pinned || slices.Contains(provenThere(t), ref.Digest) {
		return nil
	}
	e, ok := chain.Get(env)
	if !ok || e.From == "" {
		return nil // a first environment: CI promotes into it
	}
	if u := l.Lookup(e.From, ref.Repository); u != nil && slices.Contains(provenThere(u), ref.Digest) {
		return nil
	}
	return refuse(RuleNotProven, "%s is neither what %s pins (%s) nor proven in %s, which %s takes its digests from",
		imageref.Short(ref.Digest), env, imageref.Short(t.Pinned), e.From, env)
}

// provenThere are the digests proven in t's environment: now, and the
// two proven before.
func provenThere(t *release.Track) []string {
	var out []string
	for _, d := range []string{t.Proven, t.LastProven, t.PrevProven} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}
