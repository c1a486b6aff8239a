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
			if s.counted == 0 && !slices.ContainsFunc(rs, unknown) {
				continue // none of its apps runs the image
			}
			cp.Proven, cp.Why = a.Proven, cmp.Or(unread(rs), a.Why)
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

// unknown reports whether r says nothing yet of the images its app runs:
// it could not be read, or lists no container (a rollout its controller
// has not observed yet). Its cluster stays in the wave, unproven, rather
// than seeming to run none of the image.
func unknown(r Report) bool { return r.Err != nil || len(r.Containers) == 0 }

// unread says why a cluster whose apps all say nothing yet is unproven,
// or "" when one of them counts.
func unread(rs []Report) string {
	var why []string
	for _, r := range rs {
		switch {
		case !unknown(r):
			return ""
		case r.Err != nil:
			why = append(why, fmt.Sprintf("app %s: %s", r.App, r.Err))
		default:
			why = append(why, fmt.Sprintf("app %s lists no Pod yet: %s", r.App, cmp.Or(strings.Join(r.Reasons, "; "), "no container")))
		}
	}
	return strings.Join(why, "; ")
}
