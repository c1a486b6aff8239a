package chains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
)

// TestMergeQueue: on real Gitea, where the merge allow-list holds
// pinbot's account alone and a merge wants one approval. mallory, a
// writer, cannot merge her own pull request; labelled pinbot/merge,
// pinbot merges it at the head it passed, once a reviewer approved it.
// A pull request without the label, or whose head fails the gate, stays
// open though approved. Before, with that allow-list, nobody but an
// admin could merge another person's pull request at all.
func TestMergeQueue(t *testing.T) {
	ctx := context.Background()
	const good, bad = "sha256:" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "sha256:" + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	pin := func(d string) string { return "image: registry.test/app:v1@" + d + "\n" }
	r := giteatest.NewInsider(t, map[string]string{
		".pinbot.yaml":          "environments:\n  - name: staging\n    paths: [\"envs/staging/**\"]\n    apps: [web-staging]\n  - name: prod\n    from: staging\n    paths: [\"envs/prod/**\"]\n    apps: [web-prod]\n",
		"envs/staging/app.yaml": pin(good), "envs/prod/app.yaml": pin(good),
	})
	srv, repo, mallory, forge, hers := r.Srv, r.Repo, r.Mallory, r.Forge, r.Hers
	admin, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.CreateBranchProtection(repo.Owner, repo.Name, sdk.CreateBranchProtectionOption{
		RuleName: "main", RequiredApprovals: 1, EnableMergeWhitelist: true, MergeWhitelistUsernames: []string{srv.AdminUser},
	}); err != nil {
		t.Fatal(err)
	}
	reviewer, err := srv.CreateUser(ctx, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddWriter(ctx, repo.Owner, repo.Name, reviewer.Name); err != nil {
		t.Fatal(err)
	}
	approve := func(number int64) {
		t.Helper()
		c, err := srv.ClientAs(ctx, reviewer.Token)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.CreatePullReview(repo.Owner, repo.Name, number, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	open := func(branch string, files map[string]string, queued bool) *gitforge.Pull {
		t.Helper()
		if _, err := srv.CommitAs(ctx, mallory.Token, repo.Owner, repo.Name, "main", branch, files, branch); err != nil {
			t.Fatal(err)
		}
		p, err := hers.CreatePull(ctx, repo, gitforge.Pull{Head: branch, Base: "main", Title: branch})
		if err != nil {
			t.Fatal(err)
		}
		if queued {
			if err := hers.AddLabels(ctx, repo, p.Number, []string{gitforge.QueueLabel}); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	env := promote.Env{Forge: forge, Repo: repo, CloneURL: srv.RepoURL(repo.Owner, repo.Name), Auth: gitforge.Auth{Token: srv.Token}}
	rl := New(Deps{})
	step := func() {
		t.Helper()
		base, err := promote.ReadInventory(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if err := rl.gatePulls(ctx, env, release.New(), base.Config.Environments, base, nil); err != nil {
			t.Fatal(err)
		}
	}
	state := func(p *gitforge.Pull) string {
		t.Helper()
		got, err := forge.GetPull(ctx, repo, p.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.Merged {
			return "merged"
		}
		return got.State
	}

	queued := open("docs", map[string]string{"envs/prod/NOTES.md": "prod notes\n"}, true)
	unqueued := open("notes", map[string]string{"envs/staging/NOTES.md": "staging notes\n"}, false)
	unproven := open("unproven", map[string]string{"envs/prod/app.yaml": pin(bad)}, true)
	for _, p := range []*gitforge.Pull{unqueued, unproven} {
		approve(p.Number)
	}
	if err := hers.MergePull(ctx, repo, unqueued.Number, unqueued.HeadSHA, "mine"); !errors.Is(err, gitforge.ErrNotMergeable) {
		t.Fatalf("mallory merges her own approved pull request: %v; want Gitea to refuse her (the allow-list)", err)
	}
	step()
	for _, p := range []*gitforge.Pull{queued, unqueued, unproven} {
		if s := state(p); s != "open" {
			t.Errorf("#%d (%s) is %s after a step; want it open (no approval, no label, or a failing gate)", p.Number, p.Head, s)
		}
	}
	approve(queued.Number)
	step()
	if s := state(queued); s != "merged" {
		t.Fatalf("the queued pull request, approved and passed, is %s; want merged", s)
	}
	for _, p := range []*gitforge.Pull{unqueued, unproven} {
		if s := state(p); s != "open" {
			t.Errorf("#%d (%s) is %s; want it open", p.Number, p.Head, s)
		}
	}
	c, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pr, _, err := c.GetPullRequest(repo.Owner, repo.Name, queued.Number)
	if err != nil || pr.MergedCommitID == nil {
		t.Fatalf("reading the merge: %v", err)
	}
	commit, _, err := c.GetSingleCommit(repo.Owner, repo.Name, *pr.MergedCommitID)
	if err != nil {
		t.Fatal(err)
	}
	if msg := commit.RepoCommit.Message; !strings.Contains(msg, "pinbot's merge queue") || !strings.Contains(msg, fmt.Sprintf("label %s", gitforge.QueueLabel)) {
		t.Errorf("the merge commit says %q; want it to name pinbot's merge queue", msg)
	}
	st, desc := gateOf(t, forge, repo, unproven.HeadSHA)
	if st != "failure" {
		t.Errorf("the unproven head's %s is %s (%s); want failure", release.PullContext, st, desc)
	}
}

// gateOf is the newest pinbot/gate on sha.
func gateOf(t *testing.T, forge *gitforge.Gitea, repo gitforge.Repo, sha string) (state, desc string) {
	t.Helper()
	sts, err := forge.Statuses(context.Background(), repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Context == release.PullContext {
			return string(s.State), s.Description
		}
	}
	return "", ""
}

// TestChainChangeApproval: on real Gitea, mallory's pull request that
// adds an environment to .pinbot.yaml fails pinbot/gate, naming the
// command that approves its head; approved in the ledger at that head it
// passes (its pins judged as any are); a commit she pushes after the
// approval fails again.
func TestChainChangeApproval(t *testing.T) {
	ctx := context.Background()
	const good = "sha256:" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	chain := "environments:\n  - name: staging\n    paths: [\"envs/staging/**\"]\n    apps: [web-staging]\n  - name: prod\n    from: staging\n    paths: [\"envs/prod/**\"]\n    apps: [web-prod]\n"
	r := giteatest.NewInsider(t, map[string]string{".pinbot.yaml": chain, "envs/staging/app.yaml": "image: registry.test/app:v1@" + good + "\n"})
	srv, repo, mallory, forge, hers := r.Srv, r.Repo, r.Mallory, r.Forge, r.Hers
	canary := chain + "  - name: canary\n    from: staging\n    paths: [\"envs/canary/**\"]\n    apps: [web-canary]\n"
	head, err := srv.CommitAs(ctx, mallory.Token, repo.Owner, repo.Name, "main", "canary", map[string]string{".pinbot.yaml": canary}, "a canary")
	if err != nil {
		t.Fatal(err)
	}
	p, err := hers.CreatePull(ctx, repo, gitforge.Pull{Head: "canary", Base: "main", Title: "a canary"})
	if err != nil {
		t.Fatal(err)
	}
	env := promote.Env{Forge: forge, Repo: repo, CloneURL: srv.RepoURL(repo.Owner, repo.Name), Auth: gitforge.Auth{Token: srv.Token}}
	rl, l := New(Deps{}), release.New()
	step := func() {
		t.Helper()
		base, err := promote.ReadInventory(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if err := rl.gatePulls(ctx, env, l, base.Config.Environments, base, nil); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if st, desc := gateOf(t, forge, repo, head); st != "failure" || !strings.Contains(desc, fmt.Sprintf("pinbot chain approve %d --head %s", p.Number, head)) {
		t.Fatalf("the chain change before approval: %s %q; want a failure naming the command", st, desc)
	}
	if err := ApproveChain(l, p.Number, head, "alice", "a canary before prod", time.Now()); err != nil {
		t.Fatal(err)
	}
	step()
	if st, desc := gateOf(t, forge, repo, head); st != "success" || !strings.Contains(desc, "approved by alice") {
		t.Fatalf("the chain change approved at its head: %s %q; want success", st, desc)
	}
	moved, err := srv.CommitAs(ctx, mallory.Token, repo.Owner, repo.Name, "canary", "canary", map[string]string{".pinbot.yaml": strings.Replace(canary, "from: staging\n    paths: [\"envs/canary", "paths: [\"envs/canary", 1)}, "no from")
	if err != nil {
		t.Fatal(err)
	}
	step()
	if st, _ := gateOf(t, forge, repo, moved); st != "failure" {
		t.Errorf("a head pushed after the approval: %s; want failure", st)
	}
}
