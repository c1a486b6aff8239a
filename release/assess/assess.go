// Package assess judges what an environment shows of an image from the
// reports of its apps: whether the digest Git pins there is proven, and if
// not, why, and whether that is a failure. serve fills the reports from
// its apps' statuses; the release chain steps on the Assessments.
package assess

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release"
)

// Report is what the reconciler found of one app of an environment
// in one look (serve fills it from the app's status and verification),
// or why it could not look.
type Report struct {
	App string
	// Health is the app's health (Healthy, Progressing, Degraded, ...)
	// and why.
	Health       verdict.Health
	HealthReason string
	// Synced says the cluster holds what the app's Git commit declares:
	// until then a container running another digest is a rollout not
	// applied yet, not a failure.
	Synced bool
	// Verified, Commit, Reasons and Containers are the verification's:
	// the proof, the commit it compared against, why not beyond the
	// containers, and the current revisions' containers.
	Verified   bool
	Commit     string
	Reasons    []string
	Containers []verdict.ContainerVerdict
	Err        error
	// Cluster is the cluster the app runs on, as its status names it
	// ("in-cluster" for pinbot's own), and Labels its Secret's labels:
	// what a wave's placement picks it by (OfPlaced).
	Cluster string
	Labels  map[string]string
}

// Of judges image in an environment whose Git pins digest, from the
// reports of its apps. Apps that run no container of the image do not count;
// an environment none of whose apps runs it proves nothing.
func Of(image, digest string, reports []Report) release.Assessment {
	o, _ := judge(image, digest, reports)
	return o
}

// shown is what judge saw besides the Assessment: how many apps run the
// image, and whether one shows what no maxUnproven tolerates (another
// digest running once the rollout settled, or a failed rollout).
type shown struct {
	counted int
	wrong   bool
}

func judge(image, digest string, reports []Report) (release.Assessment, shown) {
	o := release.Assessment{Image: image, Digest: digest}
	var why []string
	counted, wrong := 0, false
	for _, v := range reports {
		if v.Err != nil {
			why = append(why, fmt.Sprintf("app %s: %s", v.App, v.Err))
			continue
		}
		var mine []verdict.ContainerVerdict
		for _, c := range v.Containers {
			if sameRepository(c.Image, image) {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			continue
		}
		counted++
		if o.Commit == "" {
			o.Commit = v.Commit
		}
		if !v.Synced {
			why = append(why, fmt.Sprintf("app %s is not synced to its Git commit yet", v.App))
		}
		for _, c := range mine {
			o.Pods = append(o.Pods, release.Pod{App: v.App, Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, Node: c.Node,
				Running: c.RunningDigest, Verdict: c.Verdict, Reason: c.Reason, Ready: c.Ready, Waiting: c.Waiting, NotReadySince: c.NotReadySince})
			switch {
			case c.GitDigest != digest:
				why = append(why, fmt.Sprintf("app %s: Git of its current revision pins %s, not %s", v.App, imageref.Short(c.GitDigest), imageref.Short(digest)))
			case c.Verdict == verdict.Mismatch && settled(v):
				// A failure once it lasts the readyTimeout (see Step): a
				// stale node, a registry that changed under the tag.
				wrong = true
				why = append(why, fmt.Sprintf("pod %s/%s container %s is Mismatch: %s", c.Namespace, c.Pod, c.Container, c.Reason))
			case c.Verdict == verdict.Mismatch:
				why = append(why, fmt.Sprintf("pod %s/%s container %s still runs %s", c.Namespace, c.Pod, c.Container, imageref.Short(c.RunningDigest)))
			case c.Verdict != verdict.Verified:
				why = append(why, fmt.Sprintf("pod %s/%s container %s is %s: %s", c.Namespace, c.Pod, c.Container, c.Verdict, c.Reason))
			case c.Waiting != "":
				why = append(why, fmt.Sprintf("pod %s/%s container %s is waiting: %s%s", c.Namespace, c.Pod, c.Container, c.Waiting, release.NotReadySince(c.NotReadySince)))
			case !c.Ready:
				why = append(why, fmt.Sprintf("pod %s/%s container %s is not Ready%s", c.Namespace, c.Pod, c.Container, release.NotReadySince(c.NotReadySince)))
			}
		}
		if !v.Verified {
			for _, r := range v.Reasons {
				why = append(why, fmt.Sprintf("app %s: %s", v.App, r))
			}
		}
		switch v.Health {
		case verdict.Healthy:
		case verdict.Degraded:
			if o.Failure == "" && v.Synced {
				// kstatus says Failed: the rollout will not finish.
				o.Failure = fmt.Sprintf("app %s is Degraded: %s", v.App, v.HealthReason)
			}
			why = append(why, fmt.Sprintf("app %s is Degraded: %s", v.App, v.HealthReason))
		default:
			why = append(why, fmt.Sprintf("app %s is %s: %s", v.App, v.Health, v.HealthReason))
		}
	}
	sort.Slice(o.Pods, func(i, j int) bool {
		a, b := o.Pods[i], o.Pods[j]
		return a.App+"/"+a.Namespace+"/"+a.Pod+"/"+a.Container < b.App+"/"+b.Namespace+"/"+b.Pod+"/"+b.Container
	})
	if counted == 0 && len(why) == 0 {
		why = append(why, "no Pod of the environment's apps runs "+image)
	}
	if o.Stuck() != "" {
		// The health check calls a crash loop or a failing pull Degraded
		// at once; a proof gives them the readyTimeout first (see Step),
		// since a container may crash a few times while what it needs
		// comes up.
		o.Failure = ""
	}
	why = slices.Compact(why)
	o.Proven = len(why) == 0
	o.Why = strings.Join(why, "; ")
	return o, shown{counted: counted, wrong: wrong || o.Failure != ""}
}

// settled says an app's rollout is done: synced, healthy, nothing left
// to wait for. Only then is a container running another digest than Git a
// failure; before, it is a rollout under way.
func settled(v Report) bool { return v.Synced && v.Health == verdict.Healthy && len(v.Reasons) == 0 }

func sameRepository(a, b string) bool {
	if a == b {
		return a != ""
	}
	na, err1 := imageref.ParseRepository(a)
	nb, err2 := imageref.ParseRepository(b)
	return err1 == nil && err2 == nil && na == nb
}
