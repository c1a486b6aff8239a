package reconciler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// bigSnapshot is deployments Deployments of podsEach Pods each, all running
// the pinned digest, plus a terminating old Pod per Deployment.
func bigSnapshot(deployments, podsEach int) *Snapshot {
	s := &Snapshot{Live: map[ObjectRef]*unstructured.Unstructured{}, Nodes: []*corev1.Node{node("n1", amd64)}}
	for d := range deployments {
		name := fmt.Sprintf("web%d", d)
		desired := gitDeployment(name, repo+"@"+digestB)
		s.Desired = append(s.Desired, desired)
		live := liveWorkload("apps/v1", "Deployment", name, int64(podsEach), 1, 1, nil)
		s.Live[RefOf(live)] = live
		s.ReplicaSets = append(s.ReplicaSets, replicaSet(name, "old", 1), replicaSet(name, "new", 2))
		s.Pods = append(s.Pods, pod(name+"-old", "ReplicaSet", name+"-old", nil, "app="+repo+"@"+digestA))
		for p := range podsEach {
			s.Pods = append(s.Pods, pod(fmt.Sprintf("%s-new-%d", name, p), "ReplicaSet", name+"-new", nil, "app="+repo+"@"+digestB))
		}
	}
	return s
}

// BenchmarkVerify1000Pods measures the pure verification of 1,000 Pods
// (target of `make bench`: under 1 s including the cache reads).
func BenchmarkVerify1000Pods(b *testing.B) {
	s := bigSnapshot(100, 10)
	for b.Loop() {
		if v := Verify("web", "abc", s); !v.Verified || len(v.Containers) != 1000 {
			b.Fatalf("verified %t, %d containers", v.Verified, len(v.Containers))
		}
	}
}

// BenchmarkHealth1000Pods measures health over the same snapshot.
func BenchmarkHealth1000Pods(b *testing.B) {
	s := bigSnapshot(100, 10)
	for b.Loop() {
		AssessHealth(s)
	}
}
