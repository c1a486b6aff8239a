package deployer

import (
	"fmt"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// Judgement is a verdict and why.
type Judgement struct {
	Verdict verdict.Verdict
	Reason  string
}

// Container is what Judge compares for one container, as manifest
// digests ("sha256:…").
type Container struct {
	// Head is the digest the head commit pins.
	Head string
	// Deployed is the digest the deployed revision pins; "" when that
	// revision does not have the container or is not known.
	Deployed string
	// Running is the digest the runtime reports (the Pod status's
	// imageID); "" when it reports none yet.
	Running string
}

// Behind is the reason a deployer that has not reached the head gives its
// Pods: "Argo CD has not synced <head> yet" or "Flux has not applied
// <head> yet".
func Behind(k Kind, head string) string {
	if k == Flux {
		return fmt.Sprintf("Flux has not applied %s yet", head)
	}
	return fmt.Sprintf("%s has not synced %s yet", k.Title(), head)
}

// Judge is the verdict for one container of an app k deploys, comparing
// digests only: Verified when it runs what the head pins; while the
// deployer is behind the head (atHead false), Pending with the reason
// Behind gives when it runs what the deployed revision pins; else
// Mismatch. A container with no running digest is Pending, one the head
// does not pin by digest Unknown.
func Judge(k Kind, head string, atHead bool, c Container) Judgement {
	switch {
	case c.Head == "":
		return Judgement{verdict.Unknown, "the head does not pin the image by digest"}
	case c.Running == "":
		return Judgement{verdict.Pending, "not started yet"}
	case c.Running == c.Head:
		return Judgement{verdict.Verified, ""}
	}
	vsHead := Judgement{verdict.Mismatch, fmt.Sprintf("running %s, Git %s", c.Running, c.Head)}
	vsDeployed := verdict.Mismatch
	if c.Deployed != "" && c.Running == c.Deployed {
		vsDeployed = verdict.Verified
	}
	j := Relate(k, head, atHead, vsHead, vsDeployed)
	if j.Verdict == verdict.Mismatch && !atHead && c.Deployed != "" && c.Deployed != c.Head {
		j.Reason = fmt.Sprintf("running %s, the head pins %s and the deployed revision %s", c.Running, c.Head, c.Deployed)
	}
	return j
}

// Relate is Judge's rule over verdicts, for a caller that compares images
// its own way (config digests, an index's platform child): vsHead is the
// container judged against the head's pins, vsDeployed against the
// deployed revision's. A Mismatch against the head becomes Pending, with
// the reason Behind gives, when the deployer is behind the head and the
// container runs what the deployed revision pins. Every other judgement
// stands.
func Relate(k Kind, head string, atHead bool, vsHead Judgement, vsDeployed verdict.Verdict) Judgement {
	if vsHead.Verdict == verdict.Mismatch && !atHead && vsDeployed == verdict.Verified {
		return Judgement{verdict.Pending, Behind(k, head)}
	}
	return vsHead
}

// IsVerified reports whether an app deployed by Argo CD or Flux is
// verified: the deployer is at the head, there is at least one container,
// and every container is Verified.
func IsVerified(atHead bool, verdicts []verdict.Verdict) bool {
	if !atHead || len(verdicts) == 0 {
		return false
	}
	for _, v := range verdicts {
		if v != verdict.Verified {
			return false
		}
	}
	return true
}
