package release

import (
	"fmt"
	"time"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/trust/proven"
)

// Admission is one promotion into an environment to judge: Digest of
// Image into Env, which comes from Upstream ("" for a first
// environment).
type Admission struct {
	Env, Upstream string
	Image, Digest string
	// Soak is how long a digest must have been proven in Upstream
	// before it goes on (the upstream environment's soak).
	Soak time.Duration
	// Force waives the upstream proof and its soak. It never lifts a
	// hold, nor opens a freeze.
	Force bool
	// RequireAttestation asks for pinbot's signed attestation that
	// Digest was proven in Upstream for Soak. External says Upstream is
	// not in this chain: the attestation is the only proof there is.
	RequireAttestation, External bool
	// Attested is what Upstream's attestations say of Digest, read by
	// the one asking (who holds the registry and the environment's
	// keys) when RequireAttestation; nil when none was read.
	Attested *proven.Attested
}

// Facts are what pinbot knows of an admission: from a ledger
// (FactsFrom), or from serve's gate endpoint.
type Facts struct {
	// Hold is the hold on Digest in Env, if any.
	Hold *Hold
	// FrozenUntil is set while a freeze window holds Env, as of when the
	// facts were read.
	FrozenUntil *time.Time
	// Proven reports whether Digest is proven in Upstream now; Pinned and
	// ProvenDigest are what Upstream pins and has proven, Why why Digest
	// is not proven there.
	Proven               bool
	Pinned, ProvenDigest string
	Why                  string
	// Since is when Digest's proof in Upstream began; Now is when the
	// facts were read, which the soak is measured to.
	Since, Now time.Time
	// Stopped says why the whole chain is stopped (Ledger.Stopped).
	Stopped string
}

// Rules a refusal names.
const (
	RuleHeld      = "held"
	RuleNotProven = "not-proven"
	RuleSoaking   = "soaking"
	RuleFrozen    = "frozen"
	RuleStopped   = "chain-stopped"
	// RuleNotAttested: no attestation says the digest was proven
	// upstream (for the soak), and the environment requires one.
	RuleNotAttested = "not-attested"
)

// Refusal is what one of the release chain's doors refuses: a promotion
// (Admit, JudgePull) or a container (AdmitPod). Its message names the
// rule, the environment, the image, the digest and since when, once.
type Refusal struct {
	// Container is the container AdmitPod judged, "" for a promotion.
	Container string     `json:"container,omitempty"`
	Rule      string     `json:"rule"`
	Env       string     `json:"env"`
	Image     string     `json:"image"`
	Digest    string     `json:"digest"`
	Since     *time.Time `json:"since,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	// Upstream is the environment a not-proven digest must be proven in.
	Upstream string `json:"upstream,omitempty"`
	// Detail says more: the hold's reason, what the upstream pins.
	Detail string `json:"detail,omitempty"`
}

// Error implements error.
func (r *Refusal) Error() string {
	if r.Container != "" {
		return fmt.Sprintf("container %s: %s is refused in %s (%s): %s", r.Container, clip.QuoteRef(r.Image), r.Env, r.Rule, r.Detail)
	}
	d := imageref.Short(r.Digest)
	switch r.Rule {
	case RuleHeld:
		return fmt.Sprintf("%s of %s is held in %s since %s: %s (lift it with: pinbot hold release %s %s@%s --reason TEXT)",
			d, r.Image, r.Env, r.Since.UTC().Format(time.RFC3339), r.Detail, r.Env, r.Image, r.Digest)
	case RuleFrozen:
		return fmt.Sprintf("%s is frozen until %s: %s of %s waits", r.Env, r.Until.UTC().Format(time.RFC3339), d, r.Image)
	case RuleStopped:
		return fmt.Sprintf("%s of %s into %s: %s", d, r.Image, r.Env, r.Detail)
	case RuleSoaking:
		return fmt.Sprintf("%s of %s is proven in %s since %s and soaks there until %s before %s takes it; pass --force with --reason to promote it anyway",
			d, r.Image, r.Upstream, r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339), r.Env)
	case RuleNotAttested:
		return fmt.Sprintf("%s of %s carries no attestation that it was proven in %s, which %s requires: %s; pass --force with --reason to promote it anyway",
			d, r.Image, r.Upstream, r.Env, r.Detail)
	}
	return fmt.Sprintf("%s of %s is not proven in %s, which %s takes its digests from: %s; pass --force with --reason to promote it anyway",
		d, r.Image, r.Upstream, r.Env, r.Detail)
}

// Admit is the release chain's one admission rule, which serve's gate,
// its own promotions, `pinbot promote` and drift all ask: a digest held
// in the environment never goes in, forced or not; an environment that
// comes from another takes only a digest proven there now, and for the
// upstream's soak, unless forced; and nothing goes into an environment
// inside a freeze window. It returns nil or the *Refusal of the first
// rule that refuses, in that order.
func Admit(a Admission, f Facts) error {
	if f.Stopped != "" {
		return &Refusal{Rule: RuleStopped, Env: a.Env, Image: a.Image, Digest: a.Digest, Detail: f.Stopped}
	}
	if h := f.Hold; h != nil {
		since := h.Since
		return &Refusal{Rule: RuleHeld, Env: a.Env, Image: a.Image, Digest: a.Digest, Since: &since, Detail: h.Reason}
	}
	ledger := a.Upstream != "" && !a.Force && !a.External
	if ledger && !f.Proven {
		return notProven(a, f)
	}
	if until := f.Since.Add(a.Soak); ledger && a.Soak > 0 && f.Now.Before(until) {
		since := f.Since
		return &Refusal{Rule: RuleSoaking, Env: a.Env, Image: a.Image, Digest: a.Digest, Upstream: a.Upstream, Since: &since, Until: &until}
	}
	if a.RequireAttestation && !a.Force {
		if err := attested(a, f.Now); err != nil {
			return err
		}
	}
	if f.FrozenUntil != nil {
		until := *f.FrozenUntil
		return &Refusal{Rule: RuleFrozen, Env: a.Env, Image: a.Image, Digest: a.Digest, Until: &until}
	}
	return nil
}

// attested judges the attestation an admission requires: one that says
// the digest was proven upstream for the soak. One that says less, and
// was signed before the soak could have ended, waits for the next (the
// upstream attests again when its soak ends); one signed after says all
// it will.
func attested(a Admission, now time.Time) error {
	at := a.Attested
	refuse := func(detail string) error {
		return &Refusal{Rule: RuleNotAttested, Env: a.Env, Image: a.Image, Digest: a.Digest, Upstream: a.Upstream, Detail: detail}
	}
	switch {
	case at == nil:
		return refuse("no attestation was read")
	case !at.Passed:
		return refuse(at.Why)
	case at.ProvenFor >= a.Soak:
		return nil
	}
	since, until := at.ProvenSince, at.ProvenSince.Add(a.Soak)
	if now.Before(until) {
		return &Refusal{Rule: RuleSoaking, Env: a.Env, Image: a.Image, Digest: a.Digest, Upstream: a.Upstream, Since: &since, Until: &until}
	}
	return refuse(fmt.Sprintf("the longest-proven attestation says %s for %s (attested at %s), less than %s; %s attests when a digest proves and when its soak ends, so ask for at most its soak",
		a.Upstream, at.ProvenFor, stamp(at.AttestedAt), a.Soak, a.Upstream))
}

// notProven is the refusal of a digest not proven upstream.
func notProven(a Admission, f Facts) error {
	detail := a.Upstream + " pins " + shortOrNothing(f.Pinned)
	switch {
	case f.ProvenDigest != "" && f.ProvenDigest != f.Pinned:
		detail += " and has proven " + imageref.Short(f.ProvenDigest)
	case f.ProvenDigest != "" && f.Pinned != a.Digest:
		detail += ", proven"
	}
	if f.Why != "" && f.Pinned == a.Digest {
		detail += ": " + f.Why
	}
	return &Refusal{Rule: RuleNotProven, Env: a.Env, Image: a.Image, Digest: a.Digest, Upstream: a.Upstream, Detail: detail}
}

// FactsFrom reads the facts of a from ledger l.
func FactsFrom(l *Ledger, a Admission, now time.Time) Facts {
	f := Facts{Hold: l.Held(a.Env, a.Image, a.Digest), Stopped: l.Stopped, Now: now}
	if t := l.Lookup(a.Env, a.Image); t != nil && t.FrozenUntil != nil && t.FrozenUntil.After(now) {
		u := *t.FrozenUntil
		f.FrozenUntil = &u
	}
	if a.Upstream == "" || a.External {
		return f
	}
	if t := l.Lookup(a.Upstream, a.Image); t != nil {
		f.Pinned, f.ProvenDigest, f.Why = t.Pinned, t.Proven, t.Why
		f.Proven = t.Proven == a.Digest
		if f.Proven && t.ProvenSince != nil {
			f.Since = *t.ProvenSince
		}
	}
	return f
}

func shortOrNothing(d string) string {
	if d == "" {
		return "nothing"
	}
	return imageref.Short(d)
}
