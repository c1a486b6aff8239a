package reconciler

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/internal/imageref"
)

// Literal objects for the pure-core tests.

const (
	digestA   = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB   = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	digestC   = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	digestD   = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	digestCfg = "sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
	repo      = "127.0.0.1:3000/org/app"
)

// names lists "Kind ns/name" for each object, in order.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, RefOf(o).String())
	}
	return out
}

var amd64 = imageref.Platform{OS: "linux", Architecture: "amd64"}

// obj builds an unstructured object from YAML-ish nested maps.
func obj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetName(name)
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// template is a pod template spec with one container per image, named
// app, app2, ...; init images go to initContainers named init, init2, ...
func template(images []string, inits ...string) map[string]any {
	list := func(prefix string, imgs []string) []any {
		var out []any
		for i, img := range imgs {
			n := prefix
			if i > 0 {
				n = fmt.Sprintf("%s%d", prefix, i+1)
			}
			out = append(out, map[string]any{"name": n, "image": img})
		}
		return out
	}
	spec := map[string]any{"containers": list("app", images)}
	if len(inits) > 0 {
		spec["initContainers"] = list("init", inits)
	}
	return spec
}

// gitDeployment is a Deployment as rendered from Git.
func gitDeployment(name string, images ...string) *unstructured.Unstructured {
	return obj("apps/v1", "Deployment", "web", name, map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": template(images)}},
	})
}

// liveWorkload is the cluster's copy of a workload with a UID and status.
func liveWorkload(apiVersion, kind, name string, replicas, generation, observed int64, status map[string]any) *unstructured.Unstructured {
	if status == nil {
		status = map[string]any{}
	}
	status["observedGeneration"] = observed
	u := obj(apiVersion, kind, "web", name, map[string]any{
		"spec":   map[string]any{"replicas": replicas},
		"status": status,
	})
	u.SetUID(types.UID(name + "-uid"))
	u.SetGeneration(generation)
	return u
}

func controllerRef(kind, name string) []metav1.OwnerReference {
	t := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, UID: types.UID(name + "-uid"), Controller: &t}}
}

func replicaSet(deploy, hash string, revision int) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Name: deploy + "-" + hash, Namespace: "web", UID: types.UID(deploy + "-" + hash + "-uid"),
		Labels:          map[string]string{"pod-template-hash": hash},
		Annotations:     map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(revision)},
		OwnerReferences: controllerRef("Deployment", deploy),
	}}
}

// pod builds a Pod owned by ownerKind/owner on node n1. Each status is
// "name=imageID", "name=" (running, no imageID), "name=wait:Reason:msg" or
// "init:name=imageID".
func pod(name, ownerKind, owner string, labels map[string]string, statuses ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web", Labels: labels, OwnerReferences: controllerRef(ownerKind, owner)},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, s := range statuses {
		init := strings.HasPrefix(s, "init:")
		s = strings.TrimPrefix(s, "init:")
		n, id, _ := strings.Cut(s, "=")
		cs := corev1.ContainerStatus{Name: n, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if w, ok := strings.CutPrefix(id, "wait:"); ok {
			reason, msg, _ := strings.Cut(w, ":")
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
		} else {
			cs.ImageID = id
		}
		if init {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, cs)
		} else {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		}
	}
	return p
}

func node(name string, p imageref.Platform) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: p.OS, Architecture: p.Architecture}}}
}

func liveMap(objs ...*unstructured.Unstructured) map[ObjectRef]*unstructured.Unstructured {
	m := map[ObjectRef]*unstructured.Unstructured{}
	for _, o := range objs {
		m[RefOf(o)] = o
	}
	return m
}
