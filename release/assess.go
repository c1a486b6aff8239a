package release

import (
	"fmt"
	"strings"
	"time"

	"pinbot.dev/pinbot/reconciler/verdict"
)

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
	// Clusters are each cluster's own proof, for a wave that names its
	// clusters (Placement); Proven is then the wave's, with its
	// maxUnproven.
	Clusters []ClusterProof `json:"clusters,omitempty"`
}

// ClusterProof is whether one cluster of a wave proves the digest Git
// pins, since when without a break (as the ledger keeps it), and if
// not, why.
type ClusterProof struct {
	Cluster string     `json:"cluster"`
	Proven  bool       `json:"proven"`
	Since   *time.Time `json:"since,omitempty"`
	Why     string     `json:"why,omitempty"`
}

// waitingFailures are the waiting reasons that fail a proof once the
// environment's readyTimeout has passed.
var waitingFailures = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName"}

// Stuck names a container that waits for a reason that fails a proof once
// the readyTimeout has passed (a crash loop, an image that cannot be
// pulled), or "".
func (o Assessment) Stuck() string {
	for _, p := range o.Pods {
		for _, w := range waitingFailures {
			if p.Waiting == w || strings.Contains(p.Reason, w) {
				return fmt.Sprintf("pod %s/%s container %s: %s%s", p.Namespace, p.Pod, p.Container, w, NotReadySince(p.NotReadySince))
			}
		}
	}
	return ""
}

// NotReadySince is " (not Ready since <time>)" for a known time, else "".
func NotReadySince(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return " (not Ready since " + stamp(*t) + ")"
}
