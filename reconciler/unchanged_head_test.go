package reconciler_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
)

// TestNewHeadRenderingTheSameIsNotApplied: in a repository of many apps,
// a commit that changes another app's files moves every app's head. The
// loop notes the new head (the status compares against it, and it is
// Synced) but applies nothing and records no sync, as Argo CD syncs a
// new revision only when it changes the app; a commit that changes the
// app is applied as always.
func TestNewHeadRenderingTheSameIsNotApplied(t *testing.T) {
	s := newScenario(t, "same-head", "{automated: true}")
	img := pushImage(t, "same-head-app", "v1")
	web := deployment(1, img.repo+"@"+img.digest)
	first := s.push(map[string]string{"app/web.yaml": web}, "web")
	s.setInterval("1s")
	r, log := s.counted()
	reg := prometheus.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	// passes waits for n more of the loop's passes: what did not happen
	// in them did not happen, however fast or slow the machine.
	passes := func(n int, what string) {
		t.Helper()
		from := passCount(t, reg)
		poll.Until(t, time.Minute, what, func() (bool, string) {
			got := passCount(t, reg)
			return got >= from+n, fmt.Sprintf("%d passes since, want %d", got-from, n)
		})
	}
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.RunUntil(ctx, ctx.Done()) }()
	defer func() { cancel(); <-done }()
	s.waitEntry(first, "the first commit synced and verified")
	// The passes after the rollout: the Deployment's status moved since
	// the sync applied it, so the first of them dry-runs it once.
	passes(3, "three passes after the rollout")

	log.take()
	elsewhere := s.push(map[string]string{"app/web.yaml": web, "other/README.md": "another app's change\n"}, "another app")
	poll.Until(t, time.Minute, "the loop's pass at the new head", func() (bool, string) {
		st, _, err := r.Last(s.name)
		return err == nil && st != nil && st.Commit == elsewhere && st.Sync == status.Synced && st.Verified, fmt.Sprintf("%+v %v", st, err)
	})
	passes(3, "three more passes at the new head")
	// The same Pods on the same digests: nothing to apply, and nothing
	// new to confirm by reading the Deployment again.
	counts, seen := log.take()
	if counts["apply"]+counts["dry-run"] > 0 || slices.Contains(seen, "GET /apis/apps/v1/namespaces/"+s.name+"/deployments/web") {
		t.Errorf("the passes at a head that changes nothing of the app: %s %v; want no apply and no read of the Deployment", summary(counts), seen)
	}
	rec, err := s.r.History(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if e := rec.Entries[0]; e.Commit != first || len(rec.Entries) != 1 {
		t.Errorf("after a commit that changes another app: history %+v; want the first sync alone", rec.Entries)
	}
	if rec.Status == nil || rec.Status.SyncedCommit != first || rec.Status.HeadCommit != elsewhere {
		t.Errorf("stored status %+v; want synced %.8s at head %.8s", rec.Status, first, elsewhere)
	}

	img2 := pushImage(t, "same-head-app", "v2")
	changed := s.push(map[string]string{"app/web.yaml": deployment(1, img2.repo+"@"+img2.digest), "other/README.md": "another app's change\n"}, "web v2")
	s.waitEntry(changed, "the commit that changes the app synced and verified")
	rec, err = s.r.History(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	for _, e := range rec.Entries {
		if e.Result == history.Applied {
			applied = append(applied, fmt.Sprintf("%.8s", e.Commit))
		}
	}
	if len(applied) != 2 {
		t.Errorf("syncs %v; want the first commit's and the change's", applied)
	}
}

// passCount is how many passes of the loop reg's histogram of pass
// durations has observed.
func passCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() == "pinbot_reconcile_duration_seconds" {
			for _, m := range mf.GetMetric() {
				n += int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return n
}
