package reconciler_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestIdleVerifyOnlyPassesReadFromWatches: a verified, idle verify-only
// app passed every second by the loop asks the API server for nothing:
// not its Application, not its workload (both come from watches), not its
// record (the loop keeps a copy).
func TestIdleVerifyOnlyPassesReadFromWatches(t *testing.T) {
	s := argoAppAtHead(t, "vo-idle", "interval: 1s", 1)
	s.waitStatus(rollout, "verified", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })

	r, log := s.counted()
	reg, stop := runCounted(t, r)
	// The first passes start the watches; then eight passes more, each
	// of which must ask for nothing.
	poll.Until(t, time.Minute, "the loop's first two passes", func() (bool, string) { return passesOf(t, reg, s.name) >= 2, "" })
	log.take()
	from := passesOf(t, reg, s.name)
	poll.Until(t, time.Minute, "eight passes more", func() (bool, string) { return passesOf(t, reg, s.name) >= from+8, "" })
	_, seen := log.take()
	got := map[string]int{}
	for _, req := range seen {
		got[req]++
	}
	stop()

	var lines []string
	for k, n := range got {
		lines = append(lines, fmt.Sprintf("%4d %s", n, k))
	}
	sort.Strings(lines)
	t.Logf("API requests over 8 passes, one a second:\n%s", strings.Join(lines, "\n"))
	// Only the liveness question may be asked (at most once per 30 s).
	for path, n := range got {
		if path != "GET /version" {
			t.Errorf("%d × %s while idle, want none", n, path)
		}
	}
	if st, _, err := r.Status(testCtx, s.name); err != nil || !st.Verified {
		t.Errorf("after the idle passes: %+v, %v; want still Verified", st, err)
	}
}

// TestPodReplacedUnderAProofIsJudgedAtOnce: with a 10-minute interval, a
// verified app's loop re-verifies within seconds when one of its Pods is
// replaced: the proof names the Pods that run now, not those of the last
// interval.
func TestPodReplacedUnderAProofIsJudgedAtOnce(t *testing.T) {
	s := argoAppAtHead(t, "vo-podevent", "interval: 10m", 2)

	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.r.RunUntil(ctx, ctx.Done()) }()
	defer func() { cancel(); <-done }()

	pods := func(v *verdict.Verification) []string {
		var names []string
		for _, c := range v.Containers {
			names = append(names, c.Pod)
		}
		sort.Strings(names)
		return names
	}
	var before []string
	poll.Until(t, time.Minute, "the loop's proof", func() (bool, string) {
		st, v, err := s.r.Last(s.name)
		if err != nil || v == nil || !v.Verified || len(v.Containers) != 2 {
			return false, fmt.Sprintf("%+v %v", st, err)
		}
		before = pods(v)
		return true, ""
	})
	if err := env.kube.CoreV1().Pods(s.name).Delete(testCtx, before[0], metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the proof naming the replacement Pod", func() (bool, string) {
		_, v, _ := s.r.Last(s.name)
		if v == nil {
			return false, "no verification"
		}
		now := pods(v)
		return v.Verified && len(now) == 2 && !slices.Contains(now, before[0]), fmt.Sprintf("verified %t, pods %v (before %v)", v.Verified, now, before)
	})
}

// passesOf is how many passes of app the Reconciler registered with reg
// has made (pinbot_reconcile_duration_seconds' count).
func passesOf(t *testing.T, reg *prometheus.Registry, app string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "pinbot_reconcile_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "app" && l.GetValue() == app {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// TestIdleOwnAppPassesReadFromWatches: pinbot's own automated app,
// synced and verified, passed every second by the loop, asks the API
// server for nothing: no read of its objects or of its record, and no
// dry run of the objects its last sync applied and nobody changed since
// (a restarted replica's first sync of an app in sync is such a no-op).
func TestIdleOwnAppPassesReadFromWatches(t *testing.T) {
	s := newScenario(t, "own-idle", "{automated: true}")
	img := pushImage(t, "own-idle-app", "v1")
	s.push(map[string]string{"app/web.yaml": deployment(2, img.repo+"@"+img.digest)}, "web")
	s.setInterval("1s")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(rollout, "verified", func(st *status.App, _ *verdict.Verification) bool { return st.Verified })

	r, log := s.counted()
	if _, _, err := r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	log.take()
	reg, stop := runCounted(t, r)
	poll.Until(t, time.Minute, "the loop's first three passes", func() (bool, string) { return passesOf(t, reg, s.name) >= 3, "" })
	if first, _ := log.take(); first["dry-run"]+first["apply"] > 0 {
		t.Errorf("the first passes after a sync that changed nothing: %s; want no dry run and no apply", summary(first))
	}
	from := passesOf(t, reg, s.name)
	poll.Until(t, time.Minute, "eight passes more", func() (bool, string) { return passesOf(t, reg, s.name) >= from+8, "" })
	_, seen := log.take()
	stop()
	got := map[string]int{}
	for _, req := range seen {
		got[req]++
	}
	for path, n := range got {
		if path != "GET /version" {
			t.Errorf("%d × %s while idle, want none", n, path)
		}
	}
}

// TestTakeoverTrustsTheStoredProof: a process passing a verified app for
// the first time (a replica taking over a shard, or starting) and
// finding the proof its record stores does not read the workload again
// to confirm it: the proof's writer confirmed it. Its first pass reads
// the Deployment once, to start the watch of its kind, not twice.
func TestTakeoverTrustsTheStoredProof(t *testing.T) {
	s := argoAppAtHead(t, "vo-takeover", "interval: 1s", 1)
	s.waitStatus(rollout, "verified", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })
	// The loop stores the proof.
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.r.RunUntil(ctx, ctx.Done()) }()
	poll.Until(t, time.Minute, "the proof stored", func() (bool, string) {
		rec, err := record.New(env.kube, s.r.Config().StateNamespace).Get(testCtx, s.name)
		return err == nil && rec.Status != nil && rec.Status.Verified, fmt.Sprint(err)
	})
	cancel()
	<-done

	r, log := s.counted()
	reg, stop := runCounted(t, r)
	poll.Until(t, time.Minute, "the new process's first pass", func() (bool, string) { return passesOf(t, reg, s.name) >= 1, "" })
	stop()
	_, seen := log.take()
	if n := slices.Index(seen, "GET /apis/apps/v1/namespaces/"+s.name+"/deployments/web"); n < 0 || slices.Contains(seen[n+1:], seen[n]) {
		t.Errorf("the first pass's requests: %v; want one GET of the Deployment", seen)
	}
	if st, _, err := r.Last(s.name); err != nil || st == nil || !st.Verified {
		t.Errorf("the first pass: %+v, %v; want Verified", st, err)
	}
}

// runCounted runs r's loop, its metrics in the registry it returns, until
// stop (or the test's end).
func runCounted(t *testing.T, r *reconciler.Reconciler) (*prometheus.Registry, func()) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.RunUntil(ctx, ctx.Done()) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return reg, stop
}

// argoAppAtHead is a deployer scenario with the given config line whose
// Argo CD Application deployed its branch's head: a Deployment web of
// replicas Pods, as Git pins it.
func argoAppAtHead(t *testing.T, name, config string, replicas int) *deployerScenario {
	t.Helper()
	s := newDeployerScenario(t, name, "argocd", config)
	img := pushImage(t, name+"-app", "v1")
	head := s.push(map[string]string{"app/web.yaml": namedDeployment("web", replicas, img.repo+"@"+img.digest)}, "web")
	s.createApplication("app", "HEAD", "")
	s.apply(namedDeployment("web", replicas, img.repo+"@"+img.digest))
	s.argoSynced(head, "web")
	return s
}
