package assess

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/clusters"
)

// OfPlaced judges image in a wave that names its clusters (p), from the
// reports of its apps: an app on another cluster does not count, each
// cluster is judged on its own (Of), and the wave proves image while at
// most p.MaxUnproven of its clusters are unproven, none shows another
// digest running than Git pins once its rollout settled or a failed
// rollout, and one cluster at least proves it. A cluster the wave names
// that none of its apps reports from is unproven, as is one whose apps
// cannot be read: never proven. Without a placement it is Of.
func OfPlaced(image, digest string, reports []Report, p clusters.Placement) release.Assessment {
	if !p.Named() {
		return Of(image, digest, reports)
	}
	names := slices.Clone(p.Clusters)
	on := map[string][]Report{}
	for _, r := range reports {
		if c, ok := p.Picks(r.Cluster, r.Labels); ok {
			if !slices.Contains(names, c) {
				names = append(names, c)
			}
			on[c] = append(on[c], r)
		}
	}
	o := release.Assessment{Image: image, Digest: digest}
	var unproven, wrong []string
	proven := 0
	for _, c := range names {
		cp := release.ClusterProof{Cluster: c, Why: "none of the wave's apps reports from it: pinbot knows no such cluster, or has not read it yet"}
		if rs := on[c]; len(rs) > 0 {
			a, s := judge(image, digest, rs)
			if s.counted == 0 && !slices.ContainsFunc(rs, func(r Report) bool { return r.Err != nil }) {
				continue // none of its apps runs the image
			}
			cp.Proven, cp.Why = a.Proven, a.Why
			o.Pods = append(o.Pods, a.Pods...)
			o.Commit = cmp.Or(o.Commit, a.Commit)
			if a.Failure != "" && o.Failure == "" {
				o.Failure = "cluster " + c + ": " + a.Failure
			}
			if s.wrong {
				wrong = append(wrong, "cluster "+c+": "+a.Why)
			}
		}
		o.Clusters = append(o.Clusters, cp)
		if cp.Proven {
			proven++
		} else {
			unproven = append(unproven, "cluster "+c+": "+cp.Why)
		}
	}
	tolerated, err := p.MaxUnproven.Of(len(o.Clusters))
	var why []string
	switch {
	case err != nil:
		why = append(why, "maxUnproven "+err.Error())
	case len(wrong) > 0:
		why = wrong
	case len(unproven) > tolerated:
		why = append(why, fmt.Sprintf("%d of %d clusters unproven, over maxUnproven %d", len(unproven), len(o.Clusters), tolerated))
		why = append(why, unproven...)
	case proven == 0:
		why = append(why, "no cluster of the wave proves "+image)
		why = append(why, unproven...)
	}
	o.Proven, o.Why = len(why) == 0, strings.Join(why, "; ")
	return o
}
