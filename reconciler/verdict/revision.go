package verdict

import (
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/reconciler/object"
)

// Snapshot is the state that health and verification are computed from:
// what Git declares and what the cluster reports. Building one is I/O (the
// Reconciler fills it from informer caches and the registry); reading one
// is pure.
type Snapshot struct {
	// Desired are the placed objects rendered from Git.
	Desired []*unstructured.Unstructured
	// Live holds the cluster's copy of each desired object that exists.
	Live map[object.Ref]*unstructured.Unstructured
	// Pods, ReplicaSets, Revisions (ControllerRevisions) and Nodes from
	// the app's namespaces.
	Pods        []*corev1.Pod
	ReplicaSets []*appsv1.ReplicaSet
	Revisions   []*appsv1.ControllerRevision
	Nodes       []*corev1.Node
	// NodesUnread says the Nodes could not be read (through Argo CD's
	// API, which serves none): a Pod's platform then comes from what it
	// demands of its Node, which the scheduler and the kubelet enforce.
	NodesUnread bool
	// Lookups are the registry's answers for config-digest and index-child
	// comparisons (see Needs).
	Lookups Lookups
	// Mirrors are the configured registry mirror rules, to say so when a
	// runtime reports a pinned digest under a mirror's name.
	Mirrors []Mirror
}

// Mirror maps an upstream repository prefix to the mirror's, both
// normalised: {From: "index.docker.io/library/", To: "mirror.local/hub/"}.
type Mirror struct{ From, To string }

// index speeds up the owner walks over a Snapshot.
type index struct {
	podsByOwner map[types.UID][]*corev1.Pod
	rsByOwner   map[types.UID][]*appsv1.ReplicaSet
	crByOwner   map[types.UID][]*appsv1.ControllerRevision
	pods        map[types.NamespacedName]*corev1.Pod
	nodes       map[string]*corev1.Node
	nodesUnread bool
	mirrors     []Mirror
}

// RevisionAnnotation is a Deployment's revision, on it and on each of its
// ReplicaSets.
const RevisionAnnotation = "deployment.kubernetes.io/revision"

func newIndex(s *Snapshot) *index {
	ix := &index{
		nodesUnread: s.NodesUnread,
		podsByOwner: map[types.UID][]*corev1.Pod{},
		rsByOwner:   map[types.UID][]*appsv1.ReplicaSet{},
		crByOwner:   map[types.UID][]*appsv1.ControllerRevision{},
		pods:        map[types.NamespacedName]*corev1.Pod{},
		nodes:       map[string]*corev1.Node{},
		mirrors:     s.Mirrors,
	}
	for _, p := range s.Pods {
		ix.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		if c := metav1.GetControllerOf(p); c != nil {
			ix.podsByOwner[c.UID] = append(ix.podsByOwner[c.UID], p)
		}
	}
	for _, rs := range s.ReplicaSets {
		if c := metav1.GetControllerOf(rs); c != nil {
			ix.rsByOwner[c.UID] = append(ix.rsByOwner[c.UID], rs)
		}
	}
	for _, cr := range s.Revisions {
		if c := metav1.GetControllerOf(cr); c != nil {
			ix.crByOwner[c.UID] = append(ix.crByOwner[c.UID], cr)
		}
	}
	for _, n := range s.Nodes {
		ix.nodes[n.Name] = n
	}
	return ix
}

// rollout is one workload's Pods, split by revision.
type rollout struct {
	workload object.Ref
	revision string         // the current revision's hash, when known
	current  []*corev1.Pod  // Pods of the current revision, not terminating
	old      []*corev1.Pod  // other revisions, and terminating Pods
	desired  int            // Pods the current revision should have
	notes    []string       // why the rollout cannot be verified yet
	missing  bool           // the workload is not in the cluster
	spec     *podSpecImages // what Git declares
	chain    string         // how a current Pod leads to the workload, for evidence
}

// podSpecImages are the images a pod template in Git declares.
type podSpecImages struct {
	containers, initContainers []containerImage
}

type containerImage struct{ name, image string }

// IsWorkload reports whether u runs Pods pinbot verifies.
func IsWorkload(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	switch gvk.Group + "/" + gvk.Kind {
	case "apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "batch/Job", "/Pod":
		return true
	}
	return false
}

// desiredImages reads the container images of a workload as rendered.
func desiredImages(u *unstructured.Unstructured) *podSpecImages {
	fields := []string{"spec", "template", "spec"}
	if u.GetKind() == "Pod" {
		fields = []string{"spec"}
	}
	read := func(key string) []containerImage {
		list, _, _ := unstructured.NestedSlice(u.Object, append(fields, key)...)
		var out []containerImage
		for _, c := range list {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			name, _ := m["name"].(string)
			image, _ := m["image"].(string)
			out = append(out, containerImage{name: name, image: image})
		}
		return out
	}
	return &podSpecImages{containers: read("containers"), initContainers: read("initContainers")}
}

// rolloutOf finds the Pods of desired's current revision in the snapshot.
func (ix *index) rolloutOf(desired, live *unstructured.Unstructured) rollout {
	r := rollout{workload: object.RefOf(desired), spec: desiredImages(desired), desired: 1}
	if live == nil {
		r.missing = true
		r.notes = append(r.notes, fmt.Sprintf("%s is not in the cluster", r.workload))
		return r
	}
	var err error
	switch desired.GetKind() {
	case "Deployment":
		err = ix.deployment(&r, live)
	case "StatefulSet":
		err = ix.statefulSet(&r, live)
	case "DaemonSet":
		err = ix.daemonSet(&r, live)
	case "Job":
		err = ix.job(&r, live)
	case "Pod":
		if p := ix.pods[types.NamespacedName{Namespace: live.GetNamespace(), Name: live.GetName()}]; p != nil {
			r.chain = "the Pod itself"
			r.split([]*corev1.Pod{p}, func(*corev1.Pod) bool { return true }, true)
		}
	}
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s: reading live object: %s", r.workload, err))
		return r
	}
	if len(r.current) < r.desired {
		r.notes = append(r.notes, fmt.Sprintf("%s: %d/%d Pods of the current revision", r.workload, len(r.current), r.desired))
	}
	return r
}

// split sorts pods into current and old. Terminating Pods are always old;
// finished Pods are old unless keepFinished (Jobs, bare Pods).
func (r *rollout) split(pods []*corev1.Pod, isCurrent func(*corev1.Pod) bool, keepFinished bool) {
	for _, p := range pods {
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if isCurrent(p) && p.DeletionTimestamp == nil && (keepFinished || !finished) {
			r.current = append(r.current, p)
		} else {
			r.old = append(r.old, p)
		}
	}
	byName := func(ps []*corev1.Pod) {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	}
	byName(r.current)
	byName(r.old)
}

// checkObserved notes a generation the workload's controller has not
// observed yet, and reports whether it has: until it has, the revision
// in view is the previous template's, and its Pods are not the current
// revision's.
func (r *rollout) checkObserved(generation, observed int64) bool {
	if observed < generation {
		r.notes = append(r.notes, fmt.Sprintf("%s: generation %d not yet observed by its controller", r.workload, generation))
		return false
	}
	return true
}

// none is an isCurrent for a rollout whose current revision is not in
// view yet: every Pod is old, and the rollout is Pending, not a Mismatch.
func none(*corev1.Pod) bool { return false }

func replicas(p *int32) int {
	if p == nil {
		return 1
	}
	return int(*p)
}

func (ix *index) deployment(r *rollout, live *unstructured.Unstructured) error {
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &d); err != nil {
		return err
	}
	r.desired = replicas(d.Spec.Replicas)
	observed := r.checkObserved(d.Generation, d.Status.ObservedGeneration)
	var newest *appsv1.ReplicaSet
	for _, rs := range ix.rsByOwner[d.UID] {
		if newest == nil || rsRevision(rs) > rsRevision(newest) ||
			rsRevision(rs) == rsRevision(newest) && newest.CreationTimestamp.Before(&rs.CreationTimestamp) {
			newest = rs
		}
	}
	var pods []*corev1.Pod
	for _, rs := range ix.rsByOwner[d.UID] {
		pods = append(pods, ix.podsByOwner[rs.UID]...)
	}
	if newest == nil {
		r.split(pods, none, false)
		return nil
	}
	r.revision = newest.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	// The controller writes the revision of the ReplicaSet that carries
	// the current template onto the Deployment. A newest ReplicaSet in
	// view that is not it (a cache behind, a rollout just begun) means the
	// current revision's Pods are not known yet.
	if want := d.Annotations[RevisionAnnotation]; want != "" && want != strconv.FormatInt(rsRevision(newest), 10) {
		r.notes = append(r.notes, fmt.Sprintf("%s is at revision %s, the newest ReplicaSet in view (%s) at %d", r.workload, want, newest.Name, rsRevision(newest)))
		observed = false
	}
	if !observed {
		r.split(pods, none, false)
		return nil
	}
	r.chain = fmt.Sprintf("ReplicaSet %s (uid %s, revision %d, current) → Deployment %s (uid %s, generation %d observed)",
		newest.Name, newest.UID, rsRevision(newest), d.Name, d.UID, d.Status.ObservedGeneration)
	r.split(pods, func(p *corev1.Pod) bool {
		c := metav1.GetControllerOf(p)
		return c != nil && c.UID == newest.UID
	}, false)
	return nil
}

// rsRevision is a ReplicaSet's deployment.kubernetes.io/revision.
func rsRevision(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	return n
}

func (ix *index) statefulSet(r *rollout, live *unstructured.Unstructured) error {
	var s appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &s); err != nil {
		return err
	}
	r.desired = replicas(s.Spec.Replicas)
	observed := r.checkObserved(s.Generation, s.Status.ObservedGeneration)
	r.revision = s.Status.UpdateRevision
	r.chain = fmt.Sprintf("StatefulSet %s (uid %s, update revision %s, generation %d observed)", s.Name, s.UID, r.revision, s.Status.ObservedGeneration)
	r.split(ix.podsByOwner[s.UID], func(p *corev1.Pod) bool {
		return observed && r.revision != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] == r.revision
	}, false)
	return nil
}

func (ix *index) daemonSet(r *rollout, live *unstructured.Unstructured) error {
	var ds appsv1.DaemonSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &ds); err != nil {
		return err
	}
	r.desired = int(ds.Status.DesiredNumberScheduled)
	observed := r.checkObserved(ds.Generation, ds.Status.ObservedGeneration)
	var newest *appsv1.ControllerRevision
	for _, cr := range ix.crByOwner[ds.UID] {
		if newest == nil || cr.Revision > newest.Revision {
			newest = cr
		}
	}
	if newest != nil {
		r.revision = newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		r.chain = fmt.Sprintf("DaemonSet %s (uid %s, ControllerRevision %s, revision %d, generation %d observed)", ds.Name, ds.UID, newest.Name, newest.Revision, ds.Status.ObservedGeneration)
	}
	r.split(ix.podsByOwner[ds.UID], func(p *corev1.Pod) bool {
		return observed && r.revision != "" && p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == r.revision
	}, false)
	return nil
}

func (ix *index) job(r *rollout, live *unstructured.Unstructured) error {
	var j batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &j); err != nil {
		return err
	}
	r.chain = fmt.Sprintf("Job %s (uid %s)", j.Name, j.UID)
	r.split(ix.podsByOwner[j.UID], func(*corev1.Pod) bool { return true }, true)
	return nil
}
