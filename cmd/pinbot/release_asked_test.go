package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
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
// Nothing in the cluster was changed but through Git. DORA's figures on
// /metrics follow the run: the lead time is v2's merge to its proof as
// the ledger has them, two deployments, one failed, one restore.
func TestReleaseRollbackAskedForFromThePage(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, twoEnvs, 1)
	rep := r.serveReleases("a")
	r.waitProven("staging", r.v1, 2*time.Minute)
	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	tr := r.waitProven("staging", v2, 2*time.Minute)
	repo := r.peers.Gitea.AdminUser + "/manifests"
	staging := `{env="staging",repo="` + repo + `"}`
	// DORA's lead time, from the real run: v2's merge to its proof, as the
	// ledger has them, within a second.
	lead := tr.ProvenSince.Sub(tr.Merged.At).Seconds()
	poll.Until(t, 30*time.Second, "v2's lead time on /metrics", func() (bool, string) {
		n, sum := metric(rep, "pinbot_release_merge_to_proof_seconds_count"+staging), metric(rep, "pinbot_release_merge_to_proof_seconds_sum"+staging)
		return n == 1 && math.Abs(sum-lead) < 1, fmt.Sprintf("count %v, sum %v; the ledger says %.3f s", n, sum, lead)
	})

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
	// DORA from proof: v2 and the rollback to v1 were deployed and proven,
	// v2 failed (rolled back at olga's ask), and the rollback restored it.
	poll.Until(t, 30*time.Second, "DORA's figures on /metrics", func() (bool, string) {
		d, f, r := metric(rep, "pinbot_release_deployments_total"+staging), metric(rep, "pinbot_release_failed_deployments_total"+staging),
			metric(rep, "pinbot_release_time_to_restore_seconds_count"+staging)
		return d == 2 && f == 1 && r == 1, fmt.Sprintf("deployments %v, failed %v, restores %v", d, f, r)
	})
}

// metric is the value of the series (name and labels, as exposed) on
// rep's /metrics; -1 when it has none.
func metric(rep *replica, series string) float64 {
	resp, err := http.Get("http://" + rep.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}
