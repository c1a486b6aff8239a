package reconciler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// verdicts projects a verification onto "pod/container=Verdict" lines.
func verdicts(cs []ContainerVerdict) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s/%s=%s", c.Pod, c.Container, c.Verdict))
	}
	return out
}

// rolledOut is Deployment web (2 replicas) pinned to digestB, with an old
// ReplicaSet whose Pod is terminating and a new one whose Pods report ids.
func rolledOut(ids ...string) *Snapshot {
	live := liveWorkload("apps/v1", "Deployment", "web", 2, 2, 2, nil)
	old := pod("web-old-1", "ReplicaSet", "web-old", map[string]string{"pod-template-hash": "old"}, "app="+repo+"@"+digestA)
	now := metav1.Now()
	old.DeletionTimestamp = &now
	s := &Snapshot{
		Desired:     []*unstructured.Unstructured{gitDeployment("web", repo+":v2@"+digestB)},
		Live:        liveMap(live),
		ReplicaSets: []*appsv1.ReplicaSet{replicaSet("web", "old", 1), replicaSet("web", "new", 2)},
		Pods:        []*corev1.Pod{old},
		Nodes:       []*corev1.Node{node("n1", amd64)},
		Lookups:     Lookups{},
	}
	for i, id := range ids {
		s.Pods = append(s.Pods, pod(fmt.Sprintf("web-new-%d", i+1), "ReplicaSet", "web-new", map[string]string{"pod-template-hash": "new"}, "app="+id))
	}
	return s
}

func TestVerify(t *testing.T) {
	childLookup := Lookup{Kind: LookupChild, Ref: repo + "@" + digestB, Platform: amd64}
	configLookup := Lookup{Kind: LookupConfig, Ref: repo + "@" + digestB, Platform: amd64}
	for _, tc := range []struct {
		name     string
		snap     *Snapshot
		verified bool
		want     []string // current-revision verdicts
		reason   string   // substring of the first non-Verified container's reason, or of Reasons[0]
		needs    []Lookup
	}{
		{name: "manifest digest", snap: rolledOut(repo+"@"+digestB, "docker-pullable://"+repo+"@"+digestB),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}},
		{name: "stale node image without registry answer is Unknown", snap: rolledOut(repo+"@"+digestB, repo+"@"+digestA),
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Unknown"}, reason: "registry lookup of child for linux/amd64 not made",
			needs: []Lookup{childLookup}},
		{name: "stale node image, Git pins a single manifest", snap: withLookups(rolledOut(repo+"@"+digestB, repo+"@"+digestA), Lookups{childLookup: {}}),
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Mismatch"}, reason: "running " + digestA + ", Git " + digestB,
			needs: []Lookup{childLookup}},
		{name: "platform child of the pinned index", snap: withLookups(rolledOut(repo+"@"+digestC, repo+"@"+digestC), Lookups{childLookup: {Digest: digestC}}),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}},
		{name: "another platform's child is a mismatch", snap: withLookups(rolledOut(repo+"@"+digestD), Lookups{childLookup: {Digest: digestC}}),
			want: []string{"web-new-1/app=Mismatch"}, reason: "running " + digestD},
		{name: "registry unreachable is Unknown", snap: withLookups(rolledOut(repo+"@"+digestD), Lookups{childLookup: {Err: "connection refused"}}),
			want: []string{"web-new-1/app=Unknown"}, reason: "registry unreachable for " + repo + "@" + digestB + ": connection refused"},
		{name: "config digest form", snap: withLookups(rolledOut(digestCfg, "docker://"+digestCfg), Lookups{configLookup: {Digest: digestCfg}}),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}, needs: []Lookup{childLookup, configLookup}}, // the child for the old Pod
		{name: "config digest of another image", snap: withLookups(rolledOut(digestC), Lookups{configLookup: {Digest: digestCfg}}),
			want: []string{"web-new-1/app=Mismatch"}, reason: "running config " + digestC},
		{name: "config digest, registry down", snap: withLookups(rolledOut(digestCfg), Lookups{configLookup: {Err: "timeout"}}),
			want: []string{"web-new-1/app=Unknown"}, reason: "timeout"},
		{name: "not started", snap: rolledOut("wait:ContainerCreating:", "wait:ErrImagePull:pull failed"),
			want: []string{"web-new-1/app=Pending", "web-new-2/app=Pending"}, reason: "not started yet: ContainerCreating"},
		{name: "running without imageID", snap: rolledOut("", repo+"@"+digestB),
			want: []string{"web-new-1/app=Unknown", "web-new-2/app=Verified"}, reason: "the runtime reports no imageID"},
		{name: "unrecognised imageID", snap: rolledOut("garbage", repo+"@"+digestB),
			want: []string{"web-new-1/app=Unknown", "web-new-2/app=Verified"}, reason: `unrecognised imageID "garbage"`},
		{name: "fewer Pods than replicas", snap: rolledOut(repo + "@" + digestB),
			want: []string{"web-new-1/app=Verified"}, reason: "Deployment web/web: 1/2 Pods of the current revision"},
		{name: "no Pods at all", snap: rolledOut(),
			want: []string{}, reason: "0/2 Pods"},
		{name: "rollout not observed", snap: withLive(rolledOut(repo+"@"+digestB, repo+"@"+digestB), liveWorkload("apps/v1", "Deployment", "web", 2, 3, 2, nil)),
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}, reason: "generation 3 not yet observed"},
		{name: "workload not applied", snap: withLive(rolledOut(), nil),
			want: []string{}, reason: "Deployment web/web is not in the cluster"},
		{name: "unpinned image in Git", snap: withDesired(rolledOut(repo+"@"+digestB, repo+"@"+digestB), gitDeployment("web", repo+":v2")),
			want: []string{"web-new-1/app=Unknown", "web-new-2/app=Unknown"}, reason: `image "` + repo + `:v2" is not pinned by digest`},
		{name: "pod on an unknown node needs a platform", snap: withNodes(rolledOut(repo+"@"+digestA), nil),
			want: []string{"web-new-1/app=Unknown"}, reason: "node n1 of pod web-new-1 unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Verify("web", "abc123", tc.snap)
			if diff := cmp.Diff(tc.want, verdicts(v.Containers)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if v.Verified != tc.verified {
				t.Errorf("Verified = %t, want %t (reasons %q, summary %q)", v.Verified, tc.verified, v.Reasons, v.Summary())
			}
			if len(tc.snap.Live) > 0 && (len(v.OldRevisions) != 1 || v.OldRevisions[0].Pod != "web-old-1") {
				t.Errorf("old revisions = %q, want the terminating web-old-1 alone", verdicts(v.OldRevisions))
			}
			if tc.reason != "" && !strings.Contains(firstReason(v), tc.reason) {
				t.Errorf("reason %q does not contain %q", firstReason(v), tc.reason)
			}
			if tc.needs != nil {
				if diff := cmp.Diff(tc.needs, Needs(tc.snap)); diff != "" {
					t.Errorf("Needs (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func firstReason(v *Verification) string {
	for _, c := range v.Containers {
		if c.Verdict != Verified {
			return c.Reason
		}
	}
	if len(v.Reasons) > 0 {
		return v.Reasons[0]
	}
	return ""
}

func withLookups(s *Snapshot, l Lookups) *Snapshot { s.Lookups = l; return s }
func withNodes(s *Snapshot, n []*corev1.Node) *Snapshot {
	s.Nodes = n
	return s
}
func withDesired(s *Snapshot, d ...*unstructured.Unstructured) *Snapshot { s.Desired = d; return s }
func withLive(s *Snapshot, live *unstructured.Unstructured) *Snapshot {
	s.Live = liveMap()
	if live != nil {
		s.Live = liveMap(live)
	}
	return s
}

func TestVerifyOldPodsListedApart(t *testing.T) {
	s := rolledOut(repo+"@"+digestB, repo+"@"+digestB)
	// An old Pod still running and ready (a stuck rollout keeps it serving).
	s.Pods = append(s.Pods, pod("web-old-2", "ReplicaSet", "web-old", nil, "app="+repo+"@"+digestA))
	v := Verify("web", "abc123", s)
	if !v.Verified {
		t.Errorf("not verified: %q", v.Summary())
	}
	if diff := cmp.Diff([]string{"web-old-1/app=Unknown", "web-old-2/app=Unknown"}, verdicts(v.OldRevisions)); diff != "" {
		t.Errorf("old revisions (-want +got):\n%s", diff)
	}
	if got, want := v.Summary(), "2/2 Pods run sha256:bbbbbbbbbbbb…"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestVerifyMismatchSummary(t *testing.T) {
	v := Verify("web", "abc", withLookups(rolledOut(repo+"@"+digestB, repo+"@"+digestA), Lookups{{Kind: LookupChild, Ref: repo + "@" + digestB, Platform: amd64}: {}}))
	want := "Mismatch: pod web-new-2 container app runs sha256:aaaaaaaaaaaa…, Git pins sha256:bbbbbbbbbbbb…"
	if got := v.Summary(); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	c := v.Containers[1]
	if c.Namespace != "web" || c.Pod != "web-new-2" || c.RunningDigest != digestA || c.GitDigest != digestB || c.Workload != "Deployment web/web" || c.Revision != "new" {
		t.Errorf("container verdict = %+v", c)
	}
}

func TestVerifyWorkloadKinds(t *testing.T) {
	pinned := repo + "@" + digestB
	running := "app=" + pinned
	sts := liveWorkload("apps/v1", "StatefulSet", "db", 2, 1, 1, map[string]any{"updateRevision": "db-2"})
	ds := liveWorkload("apps/v1", "DaemonSet", "agent", 0, 1, 1, map[string]any{"desiredNumberScheduled": int64(1)})
	job := liveWorkload("batch/v1", "Job", "migrate", 0, 1, 1, nil)
	bare := obj("v1", "Pod", "web", "debug", nil)
	cr := func(name, hash string, rev int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web",
			Labels: map[string]string{"controller-revision-hash": hash}, OwnerReferences: controllerRef("DaemonSet", "agent")}, Revision: rev}
	}
	finished := pod("migrate-x", "Job", "migrate", nil, running, "init:init="+pinned)
	finished.Status.Phase = corev1.PodSucceeded
	debug := pod("debug", "", "", nil, running)
	debug.OwnerReferences = nil
	s := &Snapshot{
		Desired: []*unstructured.Unstructured{
			obj("apps/v1", "StatefulSet", "web", "db", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": template([]string{pinned})}}}),
			obj("apps/v1", "DaemonSet", "web", "agent", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": template([]string{pinned})}}}),
			obj("batch/v1", "Job", "web", "migrate", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": template([]string{pinned}, pinned)}}}),
			obj("v1", "Pod", "web", "debug", map[string]any{"spec": template([]string{pinned})}),
			obj("v1", "ConfigMap", "web", "settings", nil),
		},
		Live:      liveMap(sts, ds, job, bare),
		Revisions: []*appsv1.ControllerRevision{cr("agent-1", "h1", 1), cr("agent-2", "h2", 2)},
		Pods: []*corev1.Pod{
			pod("db-0", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-2"}, running),
			pod("db-1", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-1"}, "app="+repo+"@"+digestA),
			pod("db-1x", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-2"}, running),
			pod("agent-a", "DaemonSet", "agent", map[string]string{"controller-revision-hash": "h2"}, running),
			pod("agent-old", "DaemonSet", "agent", map[string]string{"controller-revision-hash": "h1"}, running),
			finished,
			debug,
		},
		Nodes: []*corev1.Node{node("n1", amd64)},
	}
	v := Verify("web", "abc", s)
	want := []string{"db-0/app=Verified", "db-1x/app=Verified", "agent-a/app=Verified", "migrate-x/init=Verified", "migrate-x/app=Verified", "debug/app=Verified"}
	if diff := cmp.Diff(want, verdicts(v.Containers)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db-1/app=Unknown", "agent-old/app=Verified"}, verdicts(v.OldRevisions)); diff != "" {
		t.Errorf("old revisions (-want +got):\n%s", diff)
	}
	if !v.Verified {
		t.Errorf("not verified: %q", v.Reasons)
	}
	if !v.Containers[3].Init {
		t.Errorf("init container not marked: %+v", v.Containers[3])
	}
}

func TestVerifyNothingToVerify(t *testing.T) {
	v := Verify("web", "abc", &Snapshot{Desired: []*unstructured.Unstructured{obj("v1", "ConfigMap", "web", "x", nil)}})
	if v.Verified || v.Summary() != "no Pods to verify" {
		t.Errorf("Verified = %t, summary %q; want false, no Pods to verify", v.Verified, v.Summary())
	}
}
