package kubeletsim

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// fits reports whether the scheduler's part of the Sim may bind pod to its
// node: the nodeSelector and the required node affinity must match the
// node's labels and name, and no scheduling gate may hold it back. Taints
// are not checked: the node has none.
func (s *Sim) fits(pod *corev1.Pod) bool {
	if len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	labels := s.labels
	for k, v := range pod.Spec.NodeSelector {
		if labels[k] != v {
			return false
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	// Terms are ORed; the requirements within a term are ANDed.
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if matchTerm(term, labels, s.nodeName) {
			return true
		}
	}
	return false
}

func matchTerm(term corev1.NodeSelectorTerm, labels map[string]string, nodeName string) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, has := labels[r.Key]
		if !matchRequirement(r, v, has) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !matchRequirement(r, nodeName, true) {
			return false
		}
	}
	return true
}

func matchRequirement(r corev1.NodeSelectorRequirement, v string, has bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	default: // Gt and Lt: no numeric labels here.
		return false
	}
}
