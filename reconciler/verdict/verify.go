package verdict

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/object"
)

// Verdict is the answer for one container: does it run the digest Git
// pins?
type Verdict string

// Verdicts.
const (
	// Verified: the runtime reports the pinned digest, the config digest of
	// the pinned image for the Node's platform, or the Node's platform child
	// of the pinned index.
	Verified Verdict = "Verified"
	// Mismatch: the runtime reports another image (running X, Git Y).
	Mismatch Verdict = "Mismatch"
	// Pending: the container has not started yet.
	Pending Verdict = "Pending"
	// Unknown: no imageID, an unpinned image in Git, or a Pod whose Node
	// and platform are not known. Never reported as Verified or Mismatch.
	Unknown Verdict = "Unknown"
	// Inconclusive: the runtime reports a digest whose relation to the pin
	// (an index and its platform child, or a config digest) only the
	// registry can prove, and it could not: the registry did not answer,
	// or several children fit the Node's platform. Never Verified, never
	// Mismatch: the next pass asks again.
	Inconclusive Verdict = "Inconclusive"
)

// States are the states of an app's proof, for a state-set metric.
var States = []Verdict{Verified, Mismatch, Inconclusive, Unknown, Pending}

// severity orders the verdicts that keep an app from being verified.
var severity = map[Verdict]int{Unknown: 1, Inconclusive: 2, Mismatch: 3}

// StateOf is the state of a whole verification: Verified when it proves
// the app, else its worst container verdict (Mismatch, then Inconclusive,
// Unknown, Pending), and Pending when nothing was judged yet (no Pods, a
// rollout not observed) or v is nil.
func StateOf(v *Verification) Verdict {
	if v == nil {
		return Pending
	}
	if v.Verified {
		return Verified
	}
	worst := Pending
	for _, c := range v.Containers {
		if severity[c.Verdict] > severity[worst] {
			worst = c.Verdict
		}
	}
	return worst
}

// ContainerVerdict is the verification of one container of one Pod.
type ContainerVerdict struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// Image is the repository Git pins for the container, "" when its
	// image is not pinned.
	Image     string `json:"image,omitempty"`
	GitDigest string `json:"gitDigest"`
	// Tag is the tag Git writes beside the digest ("" for none): the
	// version people know the digest by.
	Tag           string  `json:"tag,omitempty"`
	RunningDigest string  `json:"runningDigest"`
	Verdict       Verdict `json:"verdict"`
	Reason        string  `json:"reason,omitempty"`
	// Ready is the container's readiness; Waiting its waiting reason
	// (CrashLoopBackOff, ImagePullBackOff, ...), whatever the verdict: a
	// crash-looping container may still report the right image.
	Ready   bool   `json:"ready"`
	Waiting string `json:"waiting,omitempty"`
	// NotReadySince is, for a container that is not Ready, when its Pod
	// last went not Ready (its Ready condition's transition; its
	// creation when it has none): the "since when" of a failed rollout.
	NotReadySince *time.Time `json:"notReadySince,omitempty"`
	Init          bool       `json:"init,omitempty"`
	Workload      string     `json:"workload"`
	Revision      string     `json:"revision,omitempty"`
	Node          string     `json:"node,omitempty"`
	// RunningRepository is the repository the imageID names when it is
	// not Image (a mirror's, or another repository with the same digest).
	RunningRepository string `json:"runningRepository,omitempty"`
	// Evidence lists what the verdict rests on: the owner chain that made
	// the Pod count, the imageID, the Node's platform, registry answers.
	Evidence []string `json:"evidence,omitempty"`
}

// Verification is the proof, or its absence, that an app's Pods run what
// Git pins.
type Verification struct {
	App    string `json:"app"`
	Commit string `json:"commit"`
	// Verified is true only when every container of every Pod of each
	// workload's current revision is Verified, each workload has its
	// desired number of such Pods, and there is at least one.
	Verified bool `json:"verified"`
	// Containers of the current revisions' Pods.
	Containers []ContainerVerdict `json:"containers"`
	// OldRevisions lists containers of Pods from other revisions, or
	// terminating: listed apart, never failures.
	OldRevisions []ContainerVerdict `json:"oldRevisions"`
	// Reasons says why the app is not verified beyond the verdicts (a
	// rollout not observed yet, fewer Pods than desired).
	Reasons []string `json:"reasons,omitempty"`
}

// Verify computes the verification of the workloads in s.Desired against
// the Pods in s. It is pure: registry answers come from s.Lookups, and a
// comparison whose answer is missing is Unknown (see Needs).
func Verify(app, commit string, s *Snapshot) *Verification {
	v := &Verification{App: app, Commit: commit, Containers: []ContainerVerdict{}, OldRevisions: []ContainerVerdict{}}
	walk(s, func(Lookup) {}, v)
	v.Verified = len(v.Containers) > 0 && len(v.Reasons) == 0
	for _, c := range v.Containers {
		if c.Verdict != Verified {
			v.Verified = false
		}
	}
	return v
}

// Needs lists the registry lookups Verify would use for s, deduplicated.
// The Reconciler answers them (cached) into s.Lookups before Verify.
func Needs(s *Snapshot) []Lookup {
	seen := map[Lookup]bool{}
	var out []Lookup
	walk(s, func(l Lookup) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}, &Verification{})
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// walk judges every container of every workload, reporting into v and
// telling need about each registry lookup a judgement depends on.
func walk(s *Snapshot, need func(Lookup), v *Verification) {
	ix := newIndex(s)
	for _, d := range s.Desired {
		if !IsWorkload(d) {
			continue
		}
		r := ix.rolloutOf(d, s.Live[object.RefOf(d)])
		v.Reasons = append(v.Reasons, r.notes...)
		for _, p := range r.current {
			for _, cv := range judgePod(ix, s.Lookups, need, &r, p) {
				cv.Evidence = append([]string{fmt.Sprintf("Pod %s (uid %s) → %s", p.Name, p.UID, r.chain)}, cv.Evidence...)
				v.Containers = append(v.Containers, cv)
			}
		}
		for _, p := range r.old {
			v.OldRevisions = append(v.OldRevisions, judgePod(ix, s.Lookups, need, &r, p)...)
		}
	}
}

// judgePod judges each container of p against the images r.spec declares,
// init containers first.
func judgePod(ix *index, lookups Lookups, need func(Lookup), r *rollout, p *corev1.Pod) []ContainerVerdict {
	platform, platformErr := ix.platform(p)
	var out []ContainerVerdict
	judge := func(c containerImage, statuses []corev1.ContainerStatus, init bool) {
		cv := ContainerVerdict{
			Namespace: p.Namespace, Pod: p.Name, Container: c.name, Init: init,
			Workload: r.workload.String(), Revision: podRevision(p, r.revision), Node: p.Spec.NodeName,
		}
		repo, gitDigest, pinned := pinnedImage(c.image)
		cv.GitDigest = gitDigest
		if pinned {
			cv.Image = repo
			_, cv.Tag, _ = imageref.Split(c.image)
		}
		var st *corev1.ContainerStatus
		for i := range statuses {
			if statuses[i].Name == c.name {
				st = &statuses[i]
			}
		}
		if st != nil && st.ImageID != "" {
			cv.RunningDigest, _ = parseImageID(st.ImageID)
		}
		if st != nil {
			cv.Ready = st.Ready
			if st.State.Waiting != nil {
				cv.Waiting = st.State.Waiting.Reason
			}
		}
		if since := notReadySince(p); !cv.Ready && !since.IsZero() {
			cv.NotReadySince = &since
		}
		switch {
		case !pinned:
			cv.Verdict, cv.Reason = Unknown, fmt.Sprintf("image %q is not pinned by digest in Git", c.image)
		case st == nil && !hasContainer(p, c.name, init):
			cv.Verdict, cv.Reason = Mismatch, missingContainer(p, c.name, init)
		case st == nil:
			cv.Verdict, cv.Reason = Pending, "not started yet"
		case st.ImageID == "" && st.State.Waiting != nil:
			cv.Verdict, cv.Reason = Pending, waitingReason(st.State.Waiting)
		case st.ImageID == "":
			cv.Verdict, cv.Reason = Unknown, "the runtime reports no imageID"
		default:
			j := compare(comparison{repo: repo, gitDigest: gitDigest, imageID: st.ImageID, platform: platform,
				platformErr: platformErr, mirrors: ix.mirrors, lookups: lookups, need: need})
			cv.Verdict, cv.Reason, cv.RunningRepository = j.verdict, j.reason, j.otherRepo
			cv.Evidence = append(cv.Evidence, j.evidence...)
		}
		out = append(out, cv)
	}
	for _, c := range r.spec.initContainers {
		judge(c, p.Status.InitContainerStatuses, true)
	}
	for _, c := range r.spec.containers {
		judge(c, p.Status.ContainerStatuses, false)
	}
	return out
}

// podRevision is the revision a Pod's labels give it (a ReplicaSet's
// pod-template-hash, a StatefulSet's or DaemonSet's
// controller-revision-hash), else the rollout's current one.
func podRevision(p *corev1.Pod, current string) string {
	for _, k := range []string{appsv1.DefaultDeploymentUniqueLabelKey, appsv1.ControllerRevisionHashLabelKey} {
		if h := p.Labels[k]; h != "" {
			return h
		}
	}
	return current
}

// hasContainer reports whether p's spec has a container (an init
// container, with init) of that name.
func hasContainer(p *corev1.Pod, name string, init bool) bool {
	cs := p.Spec.Containers
	if init {
		cs = p.Spec.InitContainers
	}
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// missingContainer says that Git declares a container the running Pod
// lacks, naming the Pod's.
func missingContainer(p *corev1.Pod, name string, init bool) string {
	kind, cs := "container", p.Spec.Containers
	if init {
		kind, cs = "init container", p.Spec.InitContainers
	}
	var names []string
	for _, c := range cs {
		names = append(names, strconv.Quote(c.Name))
	}
	running := "none"
	if len(names) > 0 {
		running = strings.Join(names, ", ")
	}
	return fmt.Sprintf("Git declares %s %q, which the running Pod lacks (its %ss: %s)", kind, name, kind, running)
}

func waitingReason(w *corev1.ContainerStateWaiting) string {
	switch {
	case w.Reason == "":
		return "not started yet"
	case w.Message == "":
		return "not started yet: " + w.Reason
	}
	return fmt.Sprintf("not started yet: %s: %s", w.Reason, w.Message)
}

// platform is the OS and architecture of the Node p runs on.
func (ix *index) platform(p *corev1.Pod) (imageref.Platform, error) {
	if p.Spec.NodeName == "" {
		return imageref.Platform{}, fmt.Errorf("pod %s is not on a node", p.Name)
	}
	n := ix.nodes[p.Spec.NodeName]
	if n == nil && ix.nodesUnread {
		return demanded(p)
	}
	if n == nil {
		return imageref.Platform{}, fmt.Errorf("node %s of pod %s unknown", p.Spec.NodeName, p.Name)
	}
	info := n.Status.NodeInfo
	if info.OperatingSystem == "" || info.Architecture == "" {
		return imageref.Platform{}, fmt.Errorf("node %s reports no os/arch", n.Name)
	}
	return imageref.Platform{OS: info.OperatingSystem, Architecture: info.Architecture}, nil
}

// demanded is the platform Pod p demands of its Node: the nodeSelector's
// kubernetes.io/arch, and its kubernetes.io/os or else spec.os.name. The
// scheduler and the kubelet both refuse a Node that does not match.
func demanded(p *corev1.Pod) (imageref.Platform, error) {
	arch, os := p.Spec.NodeSelector[corev1.LabelArchStable], p.Spec.NodeSelector[corev1.LabelOSStable]
	if os == "" && p.Spec.OS != nil {
		os = string(p.Spec.OS.Name)
	}
	if arch == "" || os == "" {
		return imageref.Platform{}, fmt.Errorf("the platform of pod %s: its Node cannot be read here, and the Pod names no %s and %s (nodeSelector, spec.os)", p.Name, corev1.LabelOSStable, corev1.LabelArchStable)
	}
	return imageref.Platform{OS: os, Architecture: arch}, nil
}

// Summary is one line for a commit status: "3/3 Pods run sha256:abcd…" or
// the first reason the app is not verified.
func (v *Verification) Summary() string {
	pods := map[string]bool{}
	bad := map[string]bool{}
	var digests []string
	seen := map[string]bool{}
	var firstBad *ContainerVerdict
	for i, c := range v.Containers {
		key := c.Namespace + "/" + c.Pod
		pods[key] = true
		if c.Verdict != Verified {
			bad[key] = true
			if firstBad == nil || c.Verdict == Mismatch && firstBad.Verdict != Mismatch {
				firstBad = &v.Containers[i]
			}
		}
		if c.GitDigest != "" && !seen[c.GitDigest] {
			seen[c.GitDigest] = true
			digests = append(digests, imageref.Abbrev(c.GitDigest))
		}
	}
	sort.Strings(digests)
	if v.Verified {
		return fmt.Sprintf("%d/%d Pods run %s", len(pods)-len(bad), len(pods), strings.Join(digests, ", "))
	}
	switch {
	case firstBad != nil && firstBad.Verdict == Mismatch:
		return fmt.Sprintf("%s: pod %s container %s runs %s, Git pins %s", firstBad.Verdict, firstBad.Pod, firstBad.Container, imageref.Abbrev(firstBad.RunningDigest), imageref.Abbrev(firstBad.GitDigest))
	case len(v.Reasons) > 0:
		return v.Reasons[0]
	case firstBad != nil:
		return fmt.Sprintf("%s: pod %s container %s: %s", firstBad.Verdict, firstBad.Pod, firstBad.Container, firstBad.Reason)
	case len(v.Containers) == 0:
		return "no Pods to verify"
	}
	return fmt.Sprintf("%d/%d Pods verified", len(pods)-len(bad), len(pods))
}

// notReadySince is when Pod p last went not Ready: the transition of its
// Ready condition, or its creation when it has none yet.
func notReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.UTC()
		}
	}
	return p.CreationTimestamp.UTC()
}

// Mismatches names the first five Pods that run another digest than Git
// pins, for an Event.
func (v *Verification) Mismatches() string {
	var parts []string
	for _, c := range v.Containers {
		if c.Verdict == Mismatch && len(parts) < 5 {
			parts = append(parts, fmt.Sprintf("pod %s container %s runs %s, Git pins %s", c.Pod, c.Container, imageref.Short(c.RunningDigest), imageref.Short(c.GitDigest)))
		}
	}
	return strings.Join(parts, "; ")
}
