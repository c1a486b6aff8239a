package cluster

import (
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cachedPod is a Pod as the caches hold it: only what verification reads
// (see trim), in a struct of its own rather than a corev1.Pod whose
// empty spec and status fields alone cost a kilobyte, with the strings
// thousands of Pods repeat (images, image IDs, Nodes) interned. A replica
// watches every Pod of its apps' namespaces, so this is most of its
// heap. pod gives it back as a *corev1.Pod for a snapshot.
type cachedPod struct {
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
	statuses       []cachedStatus
	initStatuses   []cachedStatus
}

// cachedStatus is a container status: name, image, imageID, readiness
// and wait.
type cachedStatus struct {
	name           string
	image, imageID unique.Handle[string]
	ready          bool
	waiting        *corev1.ContainerStateWaiting
}

// revisionLabels are the Pod labels verification reads: the revision of
// its ReplicaSet (Deployments) or ControllerRevision (StatefulSets,
// DaemonSets).
var revisionLabels = []string{appsv1.DefaultDeploymentUniqueLabelKey, appsv1.ControllerRevisionHashLabelKey}

// cachePod makes o's cachedPod.
func cachePod(o *corev1.Pod) *cachedPod {
	c := &cachedPod{
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
	c.statuses = cacheStatuses(o.Status.ContainerStatuses)
	c.initStatuses = cacheStatuses(o.Status.InitContainerStatuses)
	return c
}

func cacheStatuses(in []corev1.ContainerStatus) []cachedStatus {
	if in == nil {
		return nil
	}
	out := make([]cachedStatus, len(in))
	for i, s := range in {
		out[i] = cachedStatus{name: s.Name, image: unique.Make(s.Image), imageID: unique.Make(s.ImageID), ready: s.Ready}
		if w := s.State.Waiting; w != nil {
			out[i].waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
	}
	return out
}

// pod is c as a *corev1.Pod holding what the cache kept.
func (c *cachedPod) pod() *corev1.Pod {
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

func statusesOf(in []cachedStatus) []corev1.ContainerStatus {
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
