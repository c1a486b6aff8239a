package reconciler_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestIdleVerifyOnlyPassesReadFromWatches: a verified, idle verify-only
// app passed every second by the loop asks the API server for nothing:
// not its Application, not its workload (both come from watches), not its
// record (the loop keeps a copy).
func TestIdleVerifyOnlyPassesReadFromWatches(t *testing.T) {
	s := newDeployerScenario(t, "vo-idle", "argocd", "interval: 1s")
	img := pushImage(t, "vo-idle-app", "v1")
	head := s.push(map[string]string{"app/web.yaml": namedDeployment("web", 1, img.repo+"@"+img.digest)}, "web")
	s.createApplication("app", "HEAD", "")
	s.apply(namedDeployment("web", 1, img.repo+"@"+img.digest))
	s.argoSynced(head, "web")
	s.waitStatus(rollout, "verified", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })

	log := &requestLog{}
	rc := rest.CopyConfig(env.cluster.Config())
	rc.Wrap(log.wrap)
	cfg, err := config.Load(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconciler.New(cfg, rc, reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	time.Sleep(5 * time.Second) // the first passes start the watches
	log.take()
	time.Sleep(8 * time.Second)
	_, seen := log.take()
	got := map[string]int{}
	for _, req := range seen {
		got[req]++
	}
	cancel()
	<-done

	var lines []string
	for k, n := range got {
		lines = append(lines, fmt.Sprintf("%4d %s", n, k))
	}
	sort.Strings(lines)
	t.Logf("API requests over 8 s of passes every second:\n%s", strings.Join(lines, "\n"))
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
