package reconciler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/discover"
)

// TestVerifyOnlyAppsReadDiscoverysWatch: with serve's discovery watch
// shared (WithDiscovery), a verify-only app reads its Application from
// that watch. The Reconciler's own client never asks for an Application,
// so the API server sends it once per process, and a change of the
// Application still wakes the app at once.
func TestVerifyOnlyAppsReadDiscoverysWatch(t *testing.T) {
	s := argoAppAtHead(t, "vo-shared", "interval: 10m", 1)
	ctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	w := discover.Watch(ctx, s.dyn, []config.Discovery{{ArgoCD: &config.ArgoCDSelector{}}})
	if err := w.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	r, log := s.counted(reconciler.WithDiscovery(w))
	reg, stop := runCounted(t, r)
	poll.Until(t, time.Minute, "the app verified", func() (bool, string) {
		st, v, err := r.Last(s.name)
		if err != nil || st == nil {
			return false, "no pass yet"
		}
		return st.Verified && v != nil, describe(st, v)
	})

	// The passes that follow the first settle; then the loop waits for
	// its 10m interval, or for a change.
	from := passesOf(t, reg, s.name)
	for settled := time.Now(); time.Since(settled) < 3*time.Second; time.Sleep(100 * time.Millisecond) {
		if n := passesOf(t, reg, s.name); n != from {
			from, settled = n, time.Now()
		}
	}
	s.mergePatch(applicationsRes, "argocd", `{metadata: {annotations: {pinbot.test/touched: "yes"}}}`)
	poll.Until(t, 30*time.Second, "a pass woken by the Application's change (the interval is 10m)", func() (bool, string) {
		return passesOf(t, reg, s.name) > from, ""
	})
	stop()
	_, seen := log.take()
	for _, req := range seen {
		if strings.Contains(req, "/applications") {
			t.Errorf("the Reconciler's own client sent %s; want every Application read from discovery's watch", req)
		}
	}
}
