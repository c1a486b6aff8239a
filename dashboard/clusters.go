package dashboard

import (
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// ClusterPods are a stage's Pods on one cluster: Ready of Total in the
// current revision, and Old Pods of other revisions still there (Serving
// says what they run). On a wave that names its clusters, Proof says
// whether the cluster proves what Git pins, since when or why not, and
// ProofClass colours it.
type ClusterPods struct {
	Cluster           string
	Ready, Total, Old int
	Serving           string
	Unknown           string // why the cluster's Pods are not known now
	Proof, ProofClass string
}

// clusterPods counts env's apps' Pods per cluster: on a wave that names
// its clusters, those of its clusters alone, each with its proof.
func clusterPods(lg Ledger, env *release.Environment, now time.Time) []ClusterPods {
	var out []ClusterPods
	idx := map[string]int{}
	for _, name := range env.Apps {
		a, ok := lg.Apps[name]
		if !ok {
			continue
		}
		cluster := "in-cluster"
		if a.Status != nil && a.Status.Cluster != "" {
			cluster = a.Status.Cluster
		}
		if env.Placement.Named() {
			if a.Status == nil {
				continue
			}
			if cluster, ok = env.Placement.Picks(cluster, a.Status.ClusterLabels); !ok {
				continue
			}
		}
		i, ok := idx[cluster]
		if !ok {
			i = len(out)
			idx[cluster] = i
			out = append(out, ClusterPods{Cluster: cluster})
		}
		c := &out[i]
		v := appView(a, now)
		c.Ready += v.Ready
		c.Total += v.Pods
		c.Old += v.Old
		if v.Old > 0 {
			c.Serving = serving(lg, env.Name, v.OldPods)
		}
		if a.Status != nil && a.Status.Proof == "Unknown" {
			c.Unknown = a.Name + ": " + a.Status.Error
		}
	}
	for i := range out {
		out[i].Proof, out[i].ProofClass = clusterProof(lg, env.Name, out[i].Cluster, now)
	}
	return out
}

// clusterProof says whether cluster proves every image Git pins in env,
// as the ledger keeps it: since when (the latest of its images), or why
// not; "" where the ledger keeps no proof per cluster.
func clusterProof(lg Ledger, env, cluster string, now time.Time) (string, string) {
	var since *time.Time
	for _, image := range lg.Ledger.Images(env) {
		t := lg.Ledger.Lookup(env, image)
		i := slices.IndexFunc(t.Clusters, func(c release.ClusterProof) bool { return c.Cluster == cluster })
		switch {
		case i < 0:
			continue
		case !t.Clusters[i].Proven:
			return "unproven: " + t.Clusters[i].Why, "bad"
		case t.Clusters[i].Since != nil && (since == nil || t.Clusters[i].Since.After(*since)):
			since = t.Clusters[i].Since
		}
	}
	if since == nil {
		return "", ""
	}
	return "proven since " + at(*since, now).Rel, "ok"
}

// serving says what old-revision Pods run: each digest once, with the
// tag the ledger knows it by.
func serving(lg Ledger, env string, ps []PodView) string {
	var out []string
	for _, p := range ps {
		text := p.Running
		for _, image := range lg.Ledger.Images(env) {
			t := lg.Ledger.Lookup(env, image)
			for _, d := range []string{t.LastProven, t.PrevProven, t.Pinned} {
				if d != "" && imageref.Short(d) == p.Running {
					text = label(Version{tagOf(t, d), p.Running})
				}
			}
		}
		if !slices.Contains(out, text) {
			out = append(out, text)
		}
	}
	return strings.Join(out, ", ")
}
