package release

import (
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
)

// RuleNotPinned is AdmitPod's alone: the image names no digest (or no
// valid image).
const RuleNotPinned = "not-pinned"

// AdmitPod is the third door's rule, beside Admit (a promotion) and
// JudgePull (a pull request): the one serve's admission webhook applies
// to each container of a Pod or workload created or changed in env's
// namespaces, so that the gate that guards Git also guards the cluster
// (kubectl set image included). image is as container's spec names it.
//
// Git is what the gate let through, so the digest env pins is admitted;
// so are the digests it proved before (an old revision's Pods during a
// rollout, the digest a rollback returns to) and, in an environment that
// comes from another, the digests proven upstream, soaked or not. A
// digest held in env never is, whatever repository spells it, nor an
// image without a digest. A freeze, an attestation and a stopped chain
// stop what moves in Git, not what Git already pins. nil admits.
func AdmitPod(l *Ledger, chain Chain, env, container, image string) *Refusal {
	refuse := func(rule, digest, format string, args ...any) *Refusal {
		return &Refusal{Container: container, Image: image, Env: env, Digest: digest, Rule: rule, Detail: fmt.Sprintf(format, args...)}
	}
	ref, err := imageref.Parse(image)
	if err != nil {
		return refuse(RuleNotPinned, "", "%s", err)
	}
	if ref.Digest == "" {
		return refuse(RuleNotPinned, "", "it is not pinned by digest: %s admits only a digest it can check against its ledger", env)
	}
	if h := l.Held(env, ref.Repository, ref.Digest); h != nil {
		return refuse(RuleHeld, ref.Digest, "%s is held there since %s: %s", imageref.Short(ref.Digest), h.Since.UTC().Format(time.RFC3339), h.Reason)
	}
	// A digest names content, whatever repository spells it: a copy of a
	// held image in another repository, or another spelling of its
	// registry (localhost:PORT for the registry's Service), is held too.
	for _, h := range l.Holds {
		if h.Env == env && h.Digest == ref.Digest {
			return refuse(RuleHeld, ref.Digest, "%s is held there as %s since %s: %s", imageref.Short(ref.Digest), clip.QuoteRef(h.Image), h.Since.UTC().Format(time.RFC3339), h.Reason)
		}
	}
	t := l.Lookup(env, ref.Repository)
	if t == nil {
		return nil // an image the chain does not track there
	}
	if ref.Digest == t.Pinned || slices.Contains(t.provenHere(), ref.Digest) {
		return nil
	}
	e, ok := chain.Get(env)
	if !ok || e.From == "" {
		return nil // a first environment: CI promotes into it
	}
	if u := l.Lookup(e.From, ref.Repository); u != nil && slices.Contains(u.provenHere(), ref.Digest) {
		return nil
	}
	return refuse(RuleNotProven, ref.Digest, "%s is neither what %s pins (%s) nor proven in %s, which %s takes its digests from",
		imageref.Short(ref.Digest), env, imageref.Short(t.Pinned), e.From, env)
}

// provenHere are the digests proven in t's environment: now, and the
// two proven before.
func (t *Track) provenHere() []string {
	var out []string
	for _, d := range []string{t.Proven, t.LastProven, t.PrevProven} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}
