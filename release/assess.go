package release

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// AppReport is what the reconciler found of one app of an environment
// in one look (serve fills it from the app's status and verification),
// or why it could not look.
type AppReport struct {
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
}

// Pod is one container of an environment's Pods running an image, as the
// proof shows it.
type Pod struct {
	App       string          `json:"app"`
	Namespace string          `json:"namespace"`
	Pod       string          `json:"pod"`
	Container string          `json:"container"`
	Node      string          `json:"node,omitempty"`
	Running   string          `json:"running,omitempty"` // the digest the runtime reports
	Verdict   verdict.Verdict `json:"verdict"`
	Reason    string          `json:"reason,omitempty"`
	Ready     bool            `json:"ready"`
	Waiting   string          `json:"waiting,omitempty"`
	// NotReadySince is when the Pod went not Ready, if it is not.
	NotReadySince *time.Time `json:"notReadySince,omitempty"`
}

// Assessment is what an environment shows of one image now: whether
// the digest Git pins there is proven (every replica of every app running
// the image Verified, the apps verified and healthy), and if not, why,
// and whether what it shows is a failure.
type Assessment struct {
	Image  string `json:"image"`
	Digest string `json:"digest"` // the digest Git pins in the environment
	Commit string `json:"commit,omitempty"`
	Proven bool   `json:"proven"`
	// Why says why Digest is not proven ("" when it is).
	Why string `json:"why,omitempty"`
	// Failure, when set, is a failure the environment shows at once: a
	// workload whose health is Degraded (kstatus Failed: its rollout
	// will not finish). A Mismatch, a crash loop or Pods not Ready fail
	// the proof once they last the environment's readyTimeout.
	Failure string `json:"failure,omitempty"`
	Pods    []Pod  `json:"pods,omitempty"`
}

// waitingFailures are the waiting reasons that fail a proof once the
// environment's readyTimeout has passed.
var waitingFailures = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName"}

// Assess judges image in an environment whose Git pins digest, from the
// reports of its apps. Apps that run no container of the image do not count;
// an environment none of whose apps runs it proves nothing.
func Assess(image, digest string, reports []AppReport) Assessment {
	o := Assessment{Image: image, Digest: digest}
	var why []string
	counted := 0
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
			o.Pods = append(o.Pods, Pod{App: v.App, Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, Node: c.Node,
				Running: c.RunningDigest, Verdict: c.Verdict, Reason: c.Reason, Ready: c.Ready, Waiting: c.Waiting, NotReadySince: c.NotReadySince})
			switch {
			case c.GitDigest != digest:
				why = append(why, fmt.Sprintf("app %s: Git of its current revision pins %s, not %s", v.App, imageref.Short(c.GitDigest), imageref.Short(digest)))
			case c.Verdict == verdict.Mismatch && settled(v):
				// A failure once it lasts the readyTimeout (see Step): a
				// stale node, a registry that changed under the tag.
				why = append(why, fmt.Sprintf("pod %s/%s container %s is Mismatch: %s", c.Namespace, c.Pod, c.Container, c.Reason))
			case c.Verdict == verdict.Mismatch:
				why = append(why, fmt.Sprintf("pod %s/%s container %s still runs %s", c.Namespace, c.Pod, c.Container, imageref.Short(c.RunningDigest)))
			case c.Verdict != verdict.Verified:
				why = append(why, fmt.Sprintf("pod %s/%s container %s is %s: %s", c.Namespace, c.Pod, c.Container, c.Verdict, c.Reason))
			case c.Waiting != "":
				why = append(why, fmt.Sprintf("pod %s/%s container %s is waiting: %s%s", c.Namespace, c.Pod, c.Container, c.Waiting, sinceOf(c.NotReadySince)))
			case !c.Ready:
				why = append(why, fmt.Sprintf("pod %s/%s container %s is not Ready%s", c.Namespace, c.Pod, c.Container, sinceOf(c.NotReadySince)))
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
	return o
}

// settled says an app's rollout is done: synced, healthy, nothing left
// to wait for. Only then is a container running another digest than Git a
// failure; before, it is a rollout under way.
func settled(v AppReport) bool { return v.Synced && v.Health == verdict.Healthy && len(v.Reasons) == 0 }

// Stuck names a container that waits for a reason that fails a proof once
// the readyTimeout has passed (a crash loop, an image that cannot be
// pulled), or "".
func (o Assessment) Stuck() string {
	for _, p := range o.Pods {
		for _, w := range waitingFailures {
			if p.Waiting == w || strings.Contains(p.Reason, w) {
				return fmt.Sprintf("pod %s/%s container %s: %s%s", p.Namespace, p.Pod, p.Container, w, sinceOf(p.NotReadySince))
			}
		}
	}
	return ""
}

// sinceOf is " (not Ready since <time>)" for a known time, else "".
func sinceOf(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return " (not Ready since " + stamp(*t) + ")"
}

func sameRepository(a, b string) bool {
	if a == b {
		return a != ""
	}
	na, err1 := imageref.ParseRepository(a)
	nb, err2 := imageref.ParseRepository(b)
	return err1 == nil && err2 == nil && na == nb
}
