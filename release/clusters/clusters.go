// Package clusters names the clusters a release wave runs on, of those
// pinbot knows: "in-cluster" for its own, an Argo CD cluster Secret by
// its name, a cluster reached with a kubeconfig Secret by the Secret's
// name; and a selector picks them by their Secret's labels.
package clusters

import (
	"fmt"
	"strconv"
	"strings"
)

// Placement is where a wave runs: the clusters it names and those its
// selector picks.
// The wave's apps count on those clusters alone, each cluster is proven
// on its own, and MaxUnproven of them may be unproven while the wave
// counts as proven.
type Placement struct {
	// Clusters name clusters.
	Clusters []string `yaml:"clusters" json:"clusters,omitempty"`
	// Selector picks clusters by the labels of their Secret, all of
	// which must match.
	Selector map[string]string `yaml:"selector" json:"selector,omitempty"`
	// MaxUnproven is how many of the wave's clusters, a count or a
	// percentage ("25%", rounded down), may be unproven while the wave
	// counts as proven: unreachable, still rolling out, Pods not Ready.
	// A cluster that runs another digest than Git pins, or whose
	// rollout failed, is never tolerated, and one cluster at least must
	// be proven. Default 0.
	MaxUnproven Share `yaml:"maxUnproven" json:"maxUnproven,omitempty"`
}

// Named reports whether p names clusters at all.
func (p Placement) Named() bool { return len(p.Clusters) > 0 || len(p.Selector) > 0 }

// Share is a count, or a percentage of a whole ("25%").
type Share string

// Of is s of n: the count, or the percentage of n rounded down. An error
// says s is neither a count nor a percentage up to 100%.
func (s Share) Of(n int) (int, error) {
	if s == "" {
		return 0, nil
	}
	v, pct := strings.CutSuffix(string(s), "%")
	i, err := strconv.Atoi(v)
	switch {
	case err != nil || i < 0:
		return 0, fmt.Errorf("%q: want a count or a percentage such as 25%%", string(s))
	case pct && i > 100:
		return 0, fmt.Errorf("%q: over 100%%", string(s))
	case pct:
		return n * i / 100, nil
	}
	return i, nil
}

// Picks is the cluster of p an app on cluster (as its status names it,
// with its Secret's labels) counts on: the name p gives it, or, when p's
// selector picks it by its labels, its own (a kubeconfig Secret's name
// for a cluster reached with one); false when it is not p's, or not
// known ("": an app never read).
func (p Placement) Picks(cluster string, labels map[string]string) (string, bool) {
	if cluster == "" {
		return "", false
	}
	for _, n := range p.Clusters {
		if Names(n, cluster) {
			return n, true
		}
	}
	if len(p.Selector) == 0 || labels == nil {
		return "", false
	}
	for k, v := range p.Selector {
		if labels[k] != v {
			return "", false
		}
	}
	if ref, ok := strings.CutPrefix(cluster, "kubeConfig "); ok {
		_, secret, _ := strings.Cut(ref, "/")
		return secret, true // as a wave would name it
	}
	return cluster, true
}

// Names reports whether name, as a wave's clusters: spell it, names
// cluster as an app's status does: the same name, or, for a cluster
// reached with a kubeconfig Secret ("kubeConfig NAMESPACE/NAME"), NAME
// or NAMESPACE/NAME.
func Names(name, cluster string) bool {
	if name == cluster {
		return true
	}
	ref, ok := strings.CutPrefix(cluster, "kubeConfig ")
	if !ok {
		return false
	}
	_, secret, _ := strings.Cut(ref, "/")
	return name == ref || name == secret
}
