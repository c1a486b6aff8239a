// Package compact is what the watch caches keep of the objects
// verification reads (Trim): a fleet's Pods, ReplicaSets,
// ControllerRevisions and Nodes, each trimmed to the fields a proof reads
// before it enters a cache, a Pod in a struct of its own.
package compact

import (
	"bytes"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// Pod is a Pod as the caches hold it: only what verification reads
// (see Trim), in a struct of its own rather than a corev1.Pod whose
// empty spec and status fields alone cost a kilobyte, with the strings
// thousands of Pods repeat (images, image IDs, Nodes) interned. A replica
// watches every Pod of its apps' namespaces, so this is most of its
// heap. Expand gives it back as a *corev1.Pod for a snapshot.
type Pod struct {
	// ObjectMeta keeps the name, namespace, UID, resourceVersion, the
	// creation and deletion times and the owners; no labels (revision
	// says the one verification reads), annotations or managed fields.
	metav1.ObjectMeta
	revisionKey, revision string // the pod-template-hash or controller-revision-hash label
	nodeName              unique.Handle[string]
	// arch and os are what the Pod demands of its Node: the nodeSelector's
	// kubernetes.io/arch and kubernetes.io/os, and spec.os.
	arch, os       string
	specOS         corev1.OSName
	containers     []string // spec.containers' names
	initContainers []string
	phase          corev1.PodPhase
	ready          *corev1.PodCondition // the Ready condition: its status and when it last changed
	statuses       []status
	initStatuses   []status
}

// status is a container status: name, image, imageID, readiness
// and wait.
type status struct {
	name           string
	image, imageID unique.Handle[string]
	ready          bool
	waiting        *corev1.ContainerStateWaiting
}

// revisionLabels are the Pod labels verification reads: the revision of
// its ReplicaSet (Deployments) or ControllerRevision (StatefulSets,
// DaemonSets).
var revisionLabels = []string{appsv1.DefaultDeploymentUniqueLabelKey, appsv1.ControllerRevisionHashLabelKey}

// cachePod makes o's Pod.
func podOf(o *corev1.Pod) *Pod {
	c := &Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion,
			Generation: o.Generation, CreationTimestamp: o.CreationTimestamp, DeletionTimestamp: o.DeletionTimestamp,
			OwnerReferences: o.OwnerReferences,
		},
		nodeName: unique.Make(o.Spec.NodeName),
		arch:     o.Spec.NodeSelector[corev1.LabelArchStable],
		os:       o.Spec.NodeSelector[corev1.LabelOSStable],
		phase:    o.Status.Phase,
	}
	for _, k := range revisionLabels {
		if v, ok := o.Labels[k]; ok {
			c.revisionKey, c.revision = k, v
			break
		}
	}
	if o.Spec.OS != nil {
		c.specOS = o.Spec.OS.Name
	}
	for _, ct := range o.Spec.Containers {
		c.containers = append(c.containers, ct.Name)
	}
	for _, ct := range o.Spec.InitContainers {
		c.initContainers = append(c.initContainers, ct.Name)
	}
	for _, cond := range o.Status.Conditions {
		if cond.Type == corev1.PodReady {
			c.ready = &corev1.PodCondition{Type: cond.Type, Status: cond.Status, LastTransitionTime: cond.LastTransitionTime}
		}
	}
	c.statuses = statusesFrom(o.Status.ContainerStatuses)
	c.initStatuses = statusesFrom(o.Status.InitContainerStatuses)
	return c
}

func statusesFrom(in []corev1.ContainerStatus) []status {
	if in == nil {
		return nil
	}
	out := make([]status, len(in))
	for i, s := range in {
		out[i] = status{name: s.Name, image: unique.Make(s.Image), imageID: unique.Make(s.ImageID), ready: s.Ready}
		if w := s.State.Waiting; w != nil {
			out[i].waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
	}
	return out
}

// Expand is c as a *corev1.Pod holding what the cache kept.
func (c *Pod) Expand() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: c.ObjectMeta}
	p.OwnerReferences = c.OwnerReferences // shared, as a cache's objects are: read only
	if c.revisionKey != "" {
		p.Labels = map[string]string{c.revisionKey: c.revision}
	}
	p.Spec.NodeName = c.nodeName.Value()
	if c.arch != "" || c.os != "" {
		p.Spec.NodeSelector = map[string]string{}
		if c.arch != "" {
			p.Spec.NodeSelector[corev1.LabelArchStable] = c.arch
		}
		if c.os != "" {
			p.Spec.NodeSelector[corev1.LabelOSStable] = c.os
		}
	}
	if c.specOS != "" {
		p.Spec.OS = &corev1.PodOS{Name: c.specOS}
	}
	p.Spec.Containers = containerNames(c.containers)
	p.Spec.InitContainers = containerNames(c.initContainers)
	p.Status.Phase = c.phase
	if c.ready != nil {
		p.Status.Conditions = []corev1.PodCondition{*c.ready}
	}
	p.Status.ContainerStatuses = statusesOf(c.statuses)
	p.Status.InitContainerStatuses = statusesOf(c.initStatuses)
	return p
}

func containerNames(names []string) []corev1.Container {
	if names == nil {
		return nil
	}
	out := make([]corev1.Container, len(names))
	for i, n := range names {
		out[i].Name = n
	}
	return out
}

func statusesOf(in []status) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: s.name, Image: s.image.Value(), ImageID: s.imageID.Value(), Ready: s.ready}
		if s.waiting != nil {
			w := *s.waiting
			out[i].State.Waiting = &w
		}
	}
	return out
}

// Trim keeps only what verification reads, before an object enters a
// cache: metadata without managed fields; for Pods a Pod, of which
// a snapshot gets a *corev1.Pod back; for ReplicaSets and
// ControllerRevisions their revision's label and annotation, not their
// spec or data. A kubelet's Pods carry far more (volume mounts,
// resources, the last termination, the whole spec), which a watch of
// every Pod of a fleet would otherwise hold.
func Trim(obj any) (any, error) {
	meta := func(m *metav1.ObjectMeta, label, annotation string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			Labels: only(m.Labels, label), Annotations: only(m.Annotations, annotation), OwnerReferences: m.OwnerReferences,
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return podOf(o), nil
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{ObjectMeta: meta(&o.ObjectMeta, appsv1.DefaultDeploymentUniqueLabelKey, verdict.RevisionAnnotation)}, nil
	case *appsv1.ControllerRevision:
		return &appsv1.ControllerRevision{ObjectMeta: meta(&o.ObjectMeta, appsv1.ControllerRevisionHashLabelKey, ""), Revision: o.Revision}, nil
	case *corev1.Node:
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: o.Status.NodeInfo.OperatingSystem, Architecture: o.Status.NodeInfo.Architecture}}}, nil
	}
	return obj, nil
}

// only is m with key alone, or nil without it.
func only(m map[string]string, key string) map[string]string {
	if v, ok := m[key]; ok && key != "" {
		return map[string]string{key: v}
	}
	return nil
}

// JSON is an object as the caches of the deployers' objects keep it: its
// JSON, without what pinbot never reads (its managed fields and kubectl's
// last applied copy). JSON takes a fraction of the memory of the maps an
// Unstructured holds: a thousand Applications and their Deployments in
// maps were a fifth of a replica's live heap. u loses those fields.
func JSON(u *unstructured.Unstructured) ([]byte, error) {
	u.SetManagedFields(nil)
	if a := u.GetAnnotations(); a != nil {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		u.SetAnnotations(a)
	}
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(raw), nil // without the encoder's spare capacity
}
