package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release/store"
)

// TestReleaseRollbackAskedForFromThePage: staging runs v2, proven after
// v1. A person asks to roll staging back (what the release page's Roll
// back writes: the ledger entry, in their name): serve holds v2 in
// staging and prod, opens its rollback pull request to v1 naming who
// asked and why, and once it is merged v1 is proven in staging again.
// Nothing in the cluster was changed but through Git.
func TestReleaseRollbackAskedForFromThePage(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, twoEnvs, 1)
	r.serveReleases("a")
	r.waitProven("staging", r.v1, 2*time.Minute)
	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v2, 2*time.Minute)

	repo := r.peers.Gitea.AdminUser + "/manifests"
	if err := store.New(r.peers.Kube, "pinbot-system").AskRollback(ctx, repo, "staging", r.appKey(), "olga", "checkout errors since v2", time.Now()); err != nil {
		t.Fatal(err)
	}
	rb := r.pull(r.rollbackBranch("staging"), 2*time.Minute)
	if !strings.Contains(rb.Body, "rolled back by olga: checkout errors since v2") {
		t.Errorf("the rollback pull request does not say who asked and why:\n%s", rb.Body)
	}
	poll.Until(t, 30*time.Second, "v2 held in staging and prod, in olga's name", func() (bool, string) {
		l := r.ledger()
		h := l.Held("staging", r.appKey(), v2)
		return h != nil && l.Held("prod", r.appKey(), v2) != nil && strings.Contains(h.Reason, "olga"), r.ledgerSummary()
	})
	r.merge(rb.Index)
	r.waitProven("staging", r.v1, 2*time.Minute)
}
