package verdict

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	// Unknown: no imageID, an unpinned image in Git, or a registry lookup
	// that could not be made. Never reported as Verified or Mismatch.
	Unknown Verdict = "Unknown"
)

// ContainerVerdict is the verification of one container of one Pod.
type ContainerVerdict struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// Image is the repository Git pins for the container, "" when its
	// image is not pinned.
	Image         string  `json:"image,omitempty"`
	GitDigest     string  `json:"git_digest"`
	RunningDigest string  `json:"running_digest"`
	Verdict       Verdict `json:"verdict"`
	Reason        string  `json:"reason,omitempty"`
	// Ready is the container's readiness; Waiting its waiting reason
	// (CrashLoopBackOff, ImagePullBackOff, ...), whatever the verdict: a
	// crash-looping container may still report the right image.
	Ready    bool   `json:"ready"`
	Waiting  string `json:"waiting,omitempty"`
	Init     bool   `json:"init,omitempty"`
	Workload string `json:"workload"`
	Revision string `json:"revision,omitempty"`
	Node     string `json:"node,omitempty"`
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
	OldRevisions []ContainerVerdict `json:"old_revisions"`
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
		if !isWorkload(d) {
			continue
		}
		r := ix.rolloutOf(d, s.Live[object.RefOf(d)])
		v.Reasons = append(v.Reasons, r.notes...)
		for _, p := range r.current {
			v.Containers = append(v.Containers, judgePod(ix, s.Lookups, need, &r, p)...)
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
			Workload: r.workload.String(), Revision: r.revision, Node: p.Spec.NodeName,
		}
		repo, gitDigest, pinned := pinnedImage(c.image)
		cv.GitDigest = gitDigest
		if pinned {
			cv.Image = repo
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
			cv.Verdict, cv.Reason = compare(repo, gitDigest, st.ImageID, platform, platformErr, lookups, need)
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

// compare judges one reported imageID against the digest Git pins.
func compare(repo, gitDigest, imageID string, p imageref.Platform, platformErr error, lookups Lookups, need func(Lookup)) (Verdict, string) {
	running, form := parseImageID(imageID)
	if form == formInvalid {
		return Unknown, fmt.Sprintf("unrecognised imageID %q", imageID)
	}
	if form == formManifest && running == gitDigest {
		return Verified, ""
	}
	if platformErr != nil {
		return Unknown, platformErr.Error()
	}
	l := Lookup{Kind: LookupChild, Ref: repo + "@" + gitDigest, Platform: p}
	if form == formConfig {
		l.Kind = LookupConfig
	}
	need(l)
	a, ok := lookups[l]
	switch {
	case !ok:
		return Unknown, fmt.Sprintf("registry lookup of %s for %s not made", l.Kind, p)
	case a.Err != "":
		return Unknown, fmt.Sprintf("registry unreachable for %s: %s", l.Ref, a.Err)
	}
	if form == formConfig {
		if running == a.Digest {
			return Verified, fmt.Sprintf("config digest of the pinned image for %s", p)
		}
		return Mismatch, fmt.Sprintf("running config %s, Git %s has config %s for %s", running, gitDigest, a.Digest, p)
	}
	if a.Digest != "" && running == a.Digest {
		return Verified, fmt.Sprintf("the %s child of the pinned index", p)
	}
	return Mismatch, fmt.Sprintf("running %s, Git %s", running, gitDigest)
}

// platform is the OS and architecture of the Node p runs on.
func (ix *index) platform(p *corev1.Pod) (imageref.Platform, error) {
	if p.Spec.NodeName == "" {
		return imageref.Platform{}, fmt.Errorf("pod %s is not on a node", p.Name)
	}
	n := ix.nodes[p.Spec.NodeName]
	if n == nil {
		return imageref.Platform{}, fmt.Errorf("node %s of pod %s unknown", p.Spec.NodeName, p.Name)
	}
	info := n.Status.NodeInfo
	if info.OperatingSystem == "" || info.Architecture == "" {
		return imageref.Platform{}, fmt.Errorf("node %s reports no os/arch", n.Name)
	}
	return imageref.Platform{OS: info.OperatingSystem, Architecture: info.Architecture}, nil
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
