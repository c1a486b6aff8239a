package verdict_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// bigSnapshot is deployments Deployments of podsEach Pods each, all running
// the pinned digest, plus a terminating old Pod per Deployment.
func bigSnapshot(deployments, podsEach int) *verdict.Snapshot {
	s := &verdict.Snapshot{Live: map[object.Ref]*unstructured.Unstructured{}, Nodes: []*corev1.Node{fixture.Node("n1", fixture.AMD64)}}
	for d := range deployments {
		name := fmt.Sprintf("web%d", d)
		desired := fixture.GitDeployment(name, fixture.Repo+"@"+fixture.DigestB)
		s.Desired = append(s.Desired, desired)
		live := fixture.LiveWorkload("apps/v1", "Deployment", name, int64(podsEach), 1, 1, nil)
		s.Live[object.RefOf(live)] = live
		s.ReplicaSets = append(s.ReplicaSets, fixture.ReplicaSet(name, "old", 1), fixture.ReplicaSet(name, "new", 2))
		s.Pods = append(s.Pods, fixture.Pod(name+"-old", "ReplicaSet", name+"-old", nil, "app="+fixture.Repo+"@"+fixture.DigestA))
		for p := range podsEach {
			s.Pods = append(s.Pods, fixture.Pod(fmt.Sprintf("%s-new-%d", name, p), "ReplicaSet", name+"-new", nil, "app="+fixture.Repo+"@"+fixture.DigestB))
		}
	}
	return s
}

// BenchmarkVerify1000Pods measures the pure verification of 1,000 Pods
// (target of `make bench`: under 1 s including the cache reads).
func BenchmarkVerify1000Pods(b *testing.B) {
	s := bigSnapshot(100, 10)
	for b.Loop() {
		if v := verdict.Verify("web", "abc", s); !v.Verified || len(v.Containers) != 1000 {
			b.Fatalf("verified %t, %d containers", v.Verified, len(v.Containers))
		}
	}
}

// BenchmarkHealth1000Pods measures health over the same snapshot.
func BenchmarkHealth1000Pods(b *testing.B) {
	s := bigSnapshot(100, 10)
	for b.Loop() {
		verdict.AssessHealth(s)
	}
}
