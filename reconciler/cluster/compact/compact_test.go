package compact

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// A Pod as a kubelet reports it, trimmed for the cache, keeps what
// verification reads: its revision and controller, when it went not
// Ready (not its creation), the platform it demands of its Node, and
// each container's image ID, readiness and wait.
func TestTrimKeepsWhatVerificationReads(t *testing.T) {
	yes := true
	created := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	unready := metav1.NewTime(time.Date(2026, 12, 4, 17, 30, 0, 0, time.UTC))
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: name, Image: "gitea.example/org/" + name + ":1.4", ImageID: "gitea.example/org/" + name + "@sha256:" + name,
			ContainerID: "containerd://" + name, RestartCount: 7,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
			VolumeMounts:         []corev1.VolumeMountStatus{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			AllocatedResources:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "team", UID: "u1", CreationTimestamp: created,
			Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "7d9f8c"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-12-01T08:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c", UID: "rs1", Controller: &yes}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "ignored"}},
			InitContainers: []corev1.Container{{Name: "migrate", Image: "ignored"}},
			NodeSelector:   map[string]string{corev1.LabelArchStable: "arm64", "disktype": "ssd"}, OS: &corev1.PodOS{Name: corev1.Linux}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: unready, Reason: "ContainersNotReady", Message: "long"},
			},
			ContainerStatuses:     []corev1.ContainerStatus{status("web")},
			InitContainerStatuses: []corev1.ContainerStatus{status("migrate")},
		},
	}
	cached, err := Trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := cached.(*Pod).Expand()
	kept := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "gitea.example/org/" + name + ":1.4", ImageID: "gitea.example/org/" + name + "@sha256:" + name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}}}
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "team", UID: "u1", CreationTimestamp: created,
			Labels:          map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "7d9f8c"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c", UID: "rs1", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web"}}, InitContainers: []corev1.Container{{Name: "migrate"}},
			NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}, OS: &corev1.PodOS{Name: corev1.Linux}},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodRunning,
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: unready}},
			ContainerStatuses:     []corev1.ContainerStatus{kept("web")},
			InitContainerStatuses: []corev1.ContainerStatus{kept("migrate")},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trimmed Pod (-want +got):\n%s", d)
	}
}

// A ReplicaSet and a ControllerRevision keep their revision's label and
// annotation, and their owners; not the rest of their metadata.
func TestTrimKeepsTheRevisionsOfReplicaSetsAndControllerRevisions(t *testing.T) {
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d1", Controller: &yes}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8c", Namespace: "team", UID: "rs1", OwnerReferences: owner,
		Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "7d9f8c"},
		Annotations: map[string]string{verdict.RevisionAnnotation: "4", "deployment.kubernetes.io/desired-replicas": "3",
			"deployment.kubernetes.io/max-replicas": "4"}},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}}}
	got, err := Trim(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8c", Namespace: "team", UID: "rs1", OwnerReferences: owner,
		Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "7d9f8c"}, Annotations: map[string]string{verdict.RevisionAnnotation: "4"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trimmed ReplicaSet (-want +got):\n%s", d)
	}
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-5c8b", Namespace: "team", UID: "cr1", OwnerReferences: owner,
		Labels: map[string]string{"app": "db", appsv1.ControllerRevisionHashLabelKey: "5c8b"}}, Revision: 2}
	got, err = Trim(cr)
	if err != nil {
		t.Fatal(err)
	}
	wantCR := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-5c8b", Namespace: "team", UID: "cr1", OwnerReferences: owner,
		Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "5c8b"}}, Revision: 2}
	if d := cmp.Diff(wantCR, got); d != "" {
		t.Errorf("trimmed ControllerRevision (-want +got):\n%s", d)
	}
}
