package deployer

import (
	"slices"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// RelateVerifications turns vHead, the Pods verified against the head,
// into a verify-only app's verification. While the deployer is behind the
// head, a container that runs what the deployed revision pins (its verdict
// in vDeployed, nil when unknown) is Pending with the reason
// deployer.Behind gives, and the app is not verified; the first reason
// says so. Pure.
func RelateVerifications(kind Kind, head string, atHead bool, vHead, vDeployed *verdict.Verification) *verdict.Verification {
	v := *vHead
	v.Containers = slices.Clone(vHead.Containers)
	v.Reasons = slices.Clone(vHead.Reasons)
	type key struct {
		ns, pod, container string
		init               bool
	}
	deployed := map[key]verdict.Verdict{}
	if vDeployed != nil {
		for _, c := range vDeployed.Containers {
			deployed[key{c.Namespace, c.Pod, c.Container, c.Init}] = c.Verdict
		}
	}
	verdicts := make([]verdict.Verdict, 0, len(v.Containers))
	for i := range v.Containers {
		c := &v.Containers[i]
		j := Relate(kind, head, atHead, Judgement{Verdict: c.Verdict, Reason: c.Reason}, deployed[key{c.Namespace, c.Pod, c.Container, c.Init}])
		c.Verdict, c.Reason = j.Verdict, j.Reason
		verdicts = append(verdicts, j.Verdict)
	}
	if !atHead {
		v.Reasons = append([]string{Behind(kind, head)}, v.Reasons...)
	}
	v.Verified = vHead.Verified && IsVerified(atHead, verdicts)
	return &v
}

// Report is h as the reconciler reports an app's health: Unknown while the
// deployer's word may not be trusted (see Health.Counts).
func (h Health) Report() verdict.HealthReport {
	switch {
	case !h.Counts:
		return verdict.HealthReport{Health: verdict.HealthUnknown, Reason: h.Reason}
	case h.Healthy:
		return verdict.HealthReport{Health: verdict.Healthy}
	}
	switch h.Status {
	case "Progressing":
		return verdict.HealthReport{Health: verdict.Progressing, Reason: h.Reason}
	case "Missing":
		return verdict.HealthReport{Health: verdict.Missing, Reason: h.Reason}
	case "Degraded", "NotReady":
		return verdict.HealthReport{Health: verdict.Degraded, Reason: h.Reason}
	}
	return verdict.HealthReport{Health: verdict.HealthUnknown, Reason: h.Reason}
}
