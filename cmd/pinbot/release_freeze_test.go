package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
)

// TestReleaseFreezeAndAutoMerge: a freeze window over prod holds back the
// onward pull request; after it, pinbot opens it, and with autoMerge
// merges it once a reviewer approved it (branch protection wants one
// approval, which pinbot never bypasses).
func TestReleaseFreezeAndAutoMerge(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	window := now.Sub(start) + 40*time.Second // frozen from the minute's start until 40s from now
	chain := fmt.Sprintf(`environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
    soak: 1s
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [web-prod]
    autoMerge: true
    freeze:
      - {start: "%d %d * * *", duration: %s, timeZone: UTC}
`, start.Minute(), start.Hour(), window.Round(time.Second))
	r := newReleaseRig(ctx, t, chain, 1)
	frozenUntil := start.Add(window.Round(time.Second))
	g := r.peers.Gitea
	reviewer, err := g.CreateUser(ctx, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddCollaborator(g.AdminUser, "manifests", reviewer.Name, sdk.AddCollaboratorOption{Permission: ptr(sdk.AccessModeWrite)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateBranchProtection(g.AdminUser, "manifests", sdk.CreateBranchProtectionOption{
		RuleName: "main", RequiredApprovals: 1, EnableMergeWhitelist: false,
	}); err != nil {
		t.Fatal(err)
	}
	approve := func(number int64) {
		t.Helper()
		rc, err := g.ClientAs(ctx, reviewer.Token)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := rc.CreatePullReview(g.AdminUser, "manifests", number, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	rep := r.serveReleases("a", "--log-level", "debug")
	r.waitProven("staging", r.v1, 2*time.Minute)
	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	staging := r.pull(r.branch("staging"), time.Minute)
	approve(staging.Index)
	r.merge(staging.Index)
	r.waitProven("staging", v2, 2*time.Minute)
	if time.Now().Before(frozenUntil.Add(-3 * time.Second)) {
		poll.Until(t, 30*time.Second, "the ledger showing prod frozen", func() (bool, string) {
			ft := r.track("prod").FrozenUntil
			return ft != nil && ft.Equal(frozenUntil), r.ledgerSummary()
		})
		if pr := r.openPull(r.branch("prod")); pr != nil {
			t.Fatalf("prod's pull request opened inside the freeze window: #%d", pr.Index)
		}
		defer r.waitEvent(t, "web-prod", release.ReasonFreezeEnded, "the freeze window of prod ended")
		r.waitEvent(t, "web-prod", release.ReasonFreezeStarted, "until "+frozenUntil.Format(time.RFC3339))
	} else {
		t.Logf("the set-up outlasted the freeze window (until %s); its check is left out this run", frozenUntil)
	}
	prod := r.pull(r.branch("prod"), 2*time.Minute)
	if opened := time.Now(); opened.Before(frozenUntil) {
		t.Errorf("prod's pull request opened at %s, inside the window until %s", opened, frozenUntil)
	}
	poll.Until(t, time.Minute, "pinbot trying to merge prod's pull request without its approval", func() (bool, string) {
		return strings.Contains(rep.log.String(), fmt.Sprintf("not mergeable yet (approvals, checks)\" env=prod image=%s number=%d", r.app, prod.Index)), ""
	})
	if pr, _, _ := c.GetPullRequest(g.AdminUser, "manifests", prod.Index); pr.HasMerged {
		t.Fatal("pinbot merged without the required approval")
	}
	approve(prod.Index)
	poll.Until(t, time.Minute, "pinbot merging prod's approved pull request", func() (bool, string) {
		pr, _, err := c.GetPullRequest(g.AdminUser, "manifests", prod.Index)
		return err == nil && pr.HasMerged, r.ledgerSummary()
	})
	r.waitProven("prod", v2, 2*time.Minute)
}

func ptr[T any](v T) *T { return &v }

// waitEvent waits for a Kubernetes Event of reason on app's object (its
// record ConfigMap) whose message holds text.
func (r *releaseRig) waitEvent(t *testing.T, app, reason, text string) {
	t.Helper()
	poll.Until(t, time.Minute, "a "+reason+" Event on "+app, func() (bool, string) {
		evs, err := r.peers.Kube.CoreV1().Events("pinbot-system").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=pinbot-app-" + app + ",reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range evs.Items {
			if strings.Contains(e.Message, text) {
				return true, ""
			}
			got = append(got, e.Message)
		}
		return false, strings.Join(got, "\n")
	})
}
