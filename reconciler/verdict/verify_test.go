package verdict_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func TestVerify(t *testing.T) {
	children := func(d string) verdict.Lookup {
		return verdict.Lookup{Kind: verdict.LookupChildren, Ref: fixture.Repo + "@" + d, Platform: fixture.AMD64}
	}
	configs := verdict.Lookup{Kind: verdict.LookupConfigs, Ref: fixture.Repo + "@" + fixture.DigestB, Platform: fixture.AMD64}
	single := fixture.SingleManifests
	with := func(l verdict.Lookups, more verdict.Lookups) verdict.Lookups {
		for k, v := range more {
			l[k] = v
		}
		return l
	}
	pinnedIndex := verdict.Lookups{children(fixture.DigestB): {Index: true, Digests: []string{fixture.DigestC}}}
	for _, tc := range []struct {
		name     string
		snap     *verdict.Snapshot
		verified bool
		want     []string // current-revision verdicts
		reason   string   // substring of the first non-Verified container's reason, or of Reasons[0]
		needs    []verdict.Lookup
		old      []string // old-revision Pods; the terminating web-old-1 when nil
	}{
		{name: "manifest digest", snap: fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, "docker-pullable://"+fixture.Repo+"@"+fixture.DigestB),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}},
		{name: "another digest without registry answers is Inconclusive", snap: fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestA),
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Inconclusive"}, reason: "registry lookup of children of " + fixture.Repo + "@" + fixture.DigestB + " for linux/amd64 not made",
			needs: []verdict.Lookup{children(fixture.DigestA), children(fixture.DigestB)}},
		{name: "stale node image, both single manifests", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestA), single(fixture.DigestA, fixture.DigestB)),
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Mismatch"}, reason: "running " + fixture.DigestA + ", Git " + fixture.DigestB},
		{name: "platform child of the pinned index", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestC, fixture.Repo+"@"+fixture.DigestC), pinnedIndex),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}},
		{name: "another platform's child is a mismatch", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestD), pinnedIndex),
			want: []string{"web-new-1/app=Mismatch"}, reason: "running " + fixture.DigestD},
		{name: "registry unreachable is Inconclusive", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestD), verdict.Lookups{children(fixture.DigestB): {Err: "connection refused"}}),
			want: []string{"web-new-1/app=Inconclusive"}, reason: "registry unreachable for " + fixture.Repo + "@" + fixture.DigestB + ", so its relation to the running image is unproven: connection refused"},
		{name: "the runtime reports the index of the pinned child", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestC, fixture.Repo+"@"+fixture.DigestB), with(single(fixture.DigestB, fixture.DigestA), verdict.Lookups{children(fixture.DigestC): {Index: true, Digests: []string{fixture.DigestB}}})),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}},
		{name: "an index with several children for the platform is Inconclusive", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestC), with(single(fixture.DigestB, fixture.DigestA), verdict.Lookups{children(fixture.DigestC): {Index: true, Digests: []string{fixture.DigestB, fixture.DigestD}}})),
			want: []string{"web-new-1/app=Inconclusive"}, reason: "which has 2 children for linux/amd64"},
		{name: "a running index without the pinned child is a mismatch", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestC), with(single(fixture.DigestB, fixture.DigestA), verdict.Lookups{children(fixture.DigestC): {Index: true, Digests: []string{fixture.DigestD}}})),
			want: []string{"web-new-1/app=Mismatch"}, reason: "running " + fixture.DigestC},
		{name: "a running digest the pinned repository lacks is a mismatch", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestD), with(single(fixture.DigestB, fixture.DigestA), verdict.Lookups{children(fixture.DigestD): {Missing: true}})),
			want: []string{"web-new-1/app=Mismatch"}, reason: "running " + fixture.DigestD},
		{name: "the running index unreadable is Inconclusive", snap: withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestC), with(single(fixture.DigestB, fixture.DigestA), verdict.Lookups{children(fixture.DigestC): {Err: "timeout"}})),
			want: []string{"web-new-1/app=Inconclusive"}, reason: "registry unreachable for " + fixture.Repo + "@" + fixture.DigestC},
		{name: "config digest form", snap: withLookups(fixture.RolledOut(fixture.DigestCfg, "docker://"+fixture.DigestCfg), verdict.Lookups{configs: {Digests: []string{fixture.DigestCfg}}}),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"},
			needs: []verdict.Lookup{children(fixture.DigestA), children(fixture.DigestB), configs}}, // the children for the old Pod
		{name: "config digest of another image", snap: withLookups(fixture.RolledOut(fixture.DigestC), verdict.Lookups{configs: {Digests: []string{fixture.DigestCfg}}}),
			want: []string{"web-new-1/app=Mismatch"}, reason: "running config " + fixture.DigestC},
		{name: "config digest shared by several children is Inconclusive", snap: withLookups(fixture.RolledOut(fixture.DigestCfg), verdict.Lookups{configs: {Index: true, Digests: []string{fixture.DigestCfg, fixture.DigestD}}}),
			want: []string{"web-new-1/app=Inconclusive"}, reason: "one of 2 children of the pinned index for linux/amd64"},
		{name: "config digest, registry down", snap: withLookups(fixture.RolledOut(fixture.DigestCfg), verdict.Lookups{configs: {Err: "timeout"}}),
			want: []string{"web-new-1/app=Inconclusive"}, reason: "timeout"},
		{name: "another repository's name for the pinned digest", snap: fixture.RolledOut("mirror.local/hub/org/app@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB),
			verified: true, want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}},
		{name: "Deployment at a revision its newest ReplicaSet in view is not", snap: withLive(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB), annotated(fixture.LiveWorkload("apps/v1", "Deployment", "web", 2, 2, 2, nil), "deployment.kubernetes.io/revision", "3")),
			want: []string{}, old: []string{"web-new-1", "web-new-2", "web-old-1"}, reason: "Deployment web/web is at revision 3, the newest ReplicaSet in view (web-new) at 2"},
		{name: "not started", snap: fixture.RolledOut("wait:ContainerCreating:", "wait:ErrImagePull:pull failed"),
			want: []string{"web-new-1/app=Pending", "web-new-2/app=Pending"}, reason: "not started yet: ContainerCreating"},
		{name: "running without imageID", snap: fixture.RolledOut("", fixture.Repo+"@"+fixture.DigestB),
			want: []string{"web-new-1/app=Unknown", "web-new-2/app=Verified"}, reason: "the runtime reports no imageID"},
		{name: "unrecognised imageID", snap: fixture.RolledOut("garbage", fixture.Repo+"@"+fixture.DigestB),
			want: []string{"web-new-1/app=Unknown", "web-new-2/app=Verified"}, reason: `unrecognised imageID "garbage"`},
		{name: "fewer Pods than replicas", snap: fixture.RolledOut(fixture.Repo + "@" + fixture.DigestB),
			want: []string{"web-new-1/app=Verified"}, reason: "Deployment web/web: 1/2 Pods of the current revision"},
		{name: "no Pods at all", snap: fixture.RolledOut(),
			want: []string{}, reason: "0/2 Pods"},
		{name: "rollout not observed", snap: withLive(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB), fixture.LiveWorkload("apps/v1", "Deployment", "web", 2, 3, 2, nil)),
			want: []string{}, old: []string{"web-new-1", "web-new-2", "web-old-1"}, reason: "generation 3 not yet observed"},
		{name: "rollout not observed, the previous template's Pods run the old digest: Pending, not Mismatch", snap: withLive(withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestA, fixture.Repo+"@"+fixture.DigestA), single(fixture.DigestA, fixture.DigestB)), fixture.LiveWorkload("apps/v1", "Deployment", "web", 2, 3, 2, nil)),
			want: []string{}, old: []string{"web-new-1", "web-new-2", "web-old-1"}, reason: "generation 3 not yet observed"},
		{name: "workload not applied", snap: withLive(fixture.RolledOut(), nil),
			want: []string{}, reason: "Deployment web/web is not in the cluster"},
		{name: "unpinned image in Git", snap: withDesired(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB), fixture.GitDeployment("web", fixture.Repo+":v2")),
			want: []string{"web-new-1/app=Unknown", "web-new-2/app=Unknown"}, reason: `image "` + fixture.Repo + `:v2" is not pinned by digest`},
		{name: "a container Git declares and the Pod lacks", snap: renamed(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB), "main"),
			want: []string{"web-new-1/app=Mismatch"}, reason: `Git declares container "app", which the running Pod lacks (its containers: "main")`},
		{name: "pod on an unknown node needs a platform", snap: withNodes(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestA), nil),
			want: []string{"web-new-1/app=Unknown"}, reason: "node n1 of pod web-new-1 unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verdict.Verify("web", "abc123", tc.snap)
			if diff := cmp.Diff(tc.want, fixture.Verdicts(v.Containers)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if v.Verified != tc.verified {
				t.Errorf("Verified = %t, want %t (reasons %q, summary %q)", v.Verified, tc.verified, v.Reasons, v.Summary())
			}
			wantOld := tc.old
			if wantOld == nil && len(tc.snap.Live) > 0 {
				wantOld = []string{"web-old-1"}
			}
			var old []string
			for _, c := range v.OldRevisions {
				old = append(old, c.Pod)
			}
			if diff := cmp.Diff(wantOld, old); diff != "" {
				t.Errorf("old revisions (-want +got):\n%s", diff)
			}
			if tc.reason != "" && !strings.Contains(firstReason(v), tc.reason) {
				t.Errorf("reason %q does not contain %q", firstReason(v), tc.reason)
			}
			if tc.needs != nil {
				if diff := cmp.Diff(tc.needs, verdict.Needs(tc.snap)); diff != "" {
					t.Errorf("Needs (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func firstReason(v *verdict.Verification) string {
	for _, c := range v.Containers {
		if c.Verdict != verdict.Verified {
			return c.Reason
		}
	}
	if len(v.Reasons) > 0 {
		return v.Reasons[0]
	}
	return ""
}

// renamed renames the containers of the snapshot's current Pods, as a
// template applied with another container name runs them.
func renamed(s *verdict.Snapshot, name string) *verdict.Snapshot {
	for _, p := range s.Pods {
		if strings.HasPrefix(p.Name, "web-new") {
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].Name = name
				p.Status.ContainerStatuses[i].Name = name
			}
		}
	}
	return s
}

func annotated(u *unstructured.Unstructured, k, v string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{k: v})
	return u
}

func withLookups(s *verdict.Snapshot, l verdict.Lookups) *verdict.Snapshot { s.Lookups = l; return s }
func withNodes(s *verdict.Snapshot, n []*corev1.Node) *verdict.Snapshot {
	s.Nodes = n
	return s
}
func withDesired(s *verdict.Snapshot, d ...*unstructured.Unstructured) *verdict.Snapshot {
	s.Desired = d
	return s
}
func withLive(s *verdict.Snapshot, live *unstructured.Unstructured) *verdict.Snapshot {
	s.Live = fixture.LiveMap()
	if live != nil {
		s.Live = fixture.LiveMap(live)
	}
	return s
}

func TestVerifyOldPodsListedApart(t *testing.T) {
	s := fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB)
	// An old Pod still running and ready (a stuck rollout keeps it serving).
	s.Pods = append(s.Pods, fixture.Pod("web-old-2", "ReplicaSet", "web-old", nil, "app="+fixture.Repo+"@"+fixture.DigestA))
	v := verdict.Verify("web", "abc123", s)
	if !v.Verified {
		t.Errorf("not verified: %q", v.Summary())
	}
	if diff := cmp.Diff([]string{"web-old-1/app=Inconclusive", "web-old-2/app=Inconclusive"}, fixture.Verdicts(v.OldRevisions)); diff != "" {
		t.Errorf("old revisions (-want +got):\n%s", diff)
	}
	if got, want := v.Summary(), "2/2 Pods run sha256:bbbbbbbbbbbb…"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestVerifyMismatchSummary(t *testing.T) {
	v := verdict.Verify("web", "abc", withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestA), fixture.SingleManifests(fixture.DigestA, fixture.DigestB)))
	want := "Mismatch: pod web-new-2 container app runs sha256:aaaaaaaaaaaa…, Git pins sha256:bbbbbbbbbbbb…"
	if got := v.Summary(); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	c := v.Containers[1]
	if c.Namespace != "web" || c.Pod != "web-new-2" || c.RunningDigest != fixture.DigestA || c.GitDigest != fixture.DigestB || c.Workload != "Deployment web/web" || c.Revision != "new" {
		t.Errorf("container verdict = %+v", c)
	}
}

func TestVerifyWorkloadKinds(t *testing.T) {
	pinned := fixture.Repo + "@" + fixture.DigestB
	running := "app=" + pinned
	sts := fixture.LiveWorkload("apps/v1", "StatefulSet", "db", 2, 1, 1, map[string]any{"updateRevision": "db-2"})
	ds := fixture.LiveWorkload("apps/v1", "DaemonSet", "agent", 0, 1, 1, map[string]any{"desiredNumberScheduled": int64(1)})
	job := fixture.LiveWorkload("batch/v1", "Job", "migrate", 0, 1, 1, nil)
	bare := fixture.Obj("v1", "Pod", "web", "debug", nil)
	cr := func(name, hash string, rev int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web",
			Labels: map[string]string{"controller-revision-hash": hash}, OwnerReferences: fixture.ControllerRef("DaemonSet", "agent")}, Revision: rev}
	}
	finished := fixture.Pod("migrate-x", "Job", "migrate", nil, running, "init:init="+pinned)
	finished.Status.Phase = corev1.PodSucceeded
	debug := fixture.Pod("debug", "", "", nil, running)
	debug.OwnerReferences = nil
	s := &verdict.Snapshot{
		Desired: []*unstructured.Unstructured{
			fixture.Obj("apps/v1", "StatefulSet", "web", "db", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": fixture.Template([]string{pinned})}}}),
			fixture.Obj("apps/v1", "DaemonSet", "web", "agent", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": fixture.Template([]string{pinned})}}}),
			fixture.Obj("batch/v1", "Job", "web", "migrate", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": fixture.Template([]string{pinned}, pinned)}}}),
			fixture.Obj("v1", "Pod", "web", "debug", map[string]any{"spec": fixture.Template([]string{pinned})}),
			fixture.Obj("v1", "ConfigMap", "web", "settings", nil),
		},
		Live:      fixture.LiveMap(sts, ds, job, bare),
		Revisions: []*appsv1.ControllerRevision{cr("agent-1", "h1", 1), cr("agent-2", "h2", 2)},
		Pods: []*corev1.Pod{
			fixture.Pod("db-0", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-2"}, running),
			fixture.Pod("db-1", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-1"}, "app="+fixture.Repo+"@"+fixture.DigestA),
			fixture.Pod("db-1x", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-2"}, running),
			fixture.Pod("agent-a", "DaemonSet", "agent", map[string]string{"controller-revision-hash": "h2"}, running),
			fixture.Pod("agent-old", "DaemonSet", "agent", map[string]string{"controller-revision-hash": "h1"}, running),
			finished,
			debug,
		},
		Nodes: []*corev1.Node{fixture.Node("n1", fixture.AMD64)},
	}
	v := verdict.Verify("web", "abc", s)
	want := []string{"db-0/app=Verified", "db-1x/app=Verified", "agent-a/app=Verified", "migrate-x/init=Verified", "migrate-x/app=Verified", "debug/app=Verified"}
	if diff := cmp.Diff(want, fixture.Verdicts(v.Containers)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db-1/app=Inconclusive", "agent-old/app=Verified"}, fixture.Verdicts(v.OldRevisions)); diff != "" {
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
	v := verdict.Verify("web", "abc", &verdict.Snapshot{Desired: []*unstructured.Unstructured{fixture.Obj("v1", "ConfigMap", "web", "x", nil)}})
	if v.Verified || v.Summary() != "no Pods to verify" {
		t.Errorf("Verified = %t, summary %q; want false, no Pods to verify", v.Verified, v.Summary())
	}
}

// Every verdict names its evidence; a pinned digest under another
// repository's name is Verified, naming it and the mirror rule that maps
// the names.
func TestVerifyEvidenceAndMirrors(t *testing.T) {
	s := fixture.RolledOut("mirror.local/hub/org/app@"+fixture.DigestB, "other.example/app@"+fixture.DigestB)
	s.Mirrors = []verdict.Mirror{{From: "127.0.0.1:3000/", To: "mirror.local/hub/"}}
	v := verdict.Verify("web", "abc", s)
	if !v.Verified {
		t.Fatalf("not verified: %s", v.Summary())
	}
	m, o := v.Containers[0], v.Containers[1]
	if m.RunningRepository != "mirror.local/hub/org/app" || !strings.Contains(m.Reason, "mirror rule 127.0.0.1:3000/ → mirror.local/hub/") {
		t.Errorf("mirrored container: repository %q, reason %q", m.RunningRepository, m.Reason)
	}
	if o.RunningRepository != "other.example/app" || !strings.Contains(o.Reason, "another repository, other.example/app, for the same digest") {
		t.Errorf("other-named container: repository %q, reason %q", o.RunningRepository, o.Reason)
	}
	for _, c := range v.Containers {
		if len(c.Evidence) < 2 || !strings.HasPrefix(c.Evidence[0], "Pod "+c.Pod+" (uid ") ||
			!strings.Contains(c.Evidence[0], "→ ReplicaSet web-new (uid web-new-uid, revision 2, current) → Deployment web") ||
			!strings.HasPrefix(c.Evidence[1], "imageID ") {
			t.Errorf("evidence of %s = %q", c.Pod, c.Evidence)
		}
	}

	idx := fixture.RolledOut(fixture.Repo + "@" + fixture.DigestC)
	idx.Lookups = verdict.Lookups{{Kind: verdict.LookupChildren, Ref: fixture.Repo + "@" + fixture.DigestB, Platform: fixture.AMD64}: {Index: true, Digests: []string{fixture.DigestC}}}
	c := verdict.Verify("web", "abc", idx).Containers[0]
	if c.Verdict != verdict.Verified || !slices.ContainsFunc(c.Evidence, func(e string) bool {
		return strings.HasPrefix(e, "registry: index sha256:bbbbbbbbbbbb… lists sha256:cccccccccccc… for linux/amd64")
	}) || !slices.Contains(c.Evidence, "node platform linux/amd64") {
		t.Errorf("index child verdict %s, evidence %q", c.Verdict, c.Evidence)
	}
}

// A container that is not Ready says since when: its Pod's Ready
// condition's transition, or the Pod's creation when it has none; a
// Ready one says nothing.
func TestVerifyNotReadySince(t *testing.T) {
	rs := withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB), fixture.SingleManifests(fixture.DigestB))
	for _, p := range rs.Pods {
		p.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
		for j := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[j].Ready = true
		}
	}
	ready := verdict.Verify("web", "abc", rs)
	for _, c := range ready.Containers {
		if c.NotReadySince != nil {
			t.Errorf("ready container %s/%s: not Ready since %s", c.Pod, c.Container, c.NotReadySince)
		}
	}

	s := withLookups(fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB), fixture.SingleManifests(fixture.DigestB))
	went := metav1.NewTime(time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC))
	created := metav1.NewTime(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	for _, p := range s.Pods {
		p.CreationTimestamp = created
		p.Status.Conditions = nil
		for j := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[j].Ready = false
		}
		if p.Name == "web-new-2" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: went}}
		}
	}
	v := verdict.Verify("web", "abc", s)
	got := map[string]string{}
	for _, c := range v.Containers {
		if c.NotReadySince != nil {
			got[c.Pod] = c.NotReadySince.Format(time.RFC3339)
		}
	}
	want := map[string]string{"web-new-1": "2026-12-04T09:00:00Z", "web-new-2": "2026-12-04T09:30:00Z"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("not Ready since (-want +got):\n%s", diff)
	}
}
