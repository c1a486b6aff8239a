package chains

import (
	"context"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/release"
)

// TestMergeBypass: on real Gitea, with a write collaborator. A merge
// counts as through the gate only when the head it merged carries
// pinbot's own pinbot/gate success; her forged success (posted after
// pinbot's failure, so it is the one Gitea shows), a pending gate, no
// gate, and a direct push are each named as a bypass, with who opened
// and who merged the pull request (a forced promotion's too). Before serve read
// the status's author, her forged success was taken for pinbot's.
func TestMergeBypass(t *testing.T) {
	r := giteatest.NewInsider(t, map[string]string{"prod/app.yaml": "image: app@sha256:0\n"})
	srv, repo, mallory, forge, hers := r.Srv, r.Repo, r.Mallory, r.Forge, r.Hers
	ctx := context.Background()
	var err error
	gate := func(state commitstatus.State) gitforge.Status {
		return gitforge.Status{Context: release.PullContext, State: state, Description: string(state)}
	}
	for i, tc := range []struct {
		name   string
		posts  func(head string) // statuses on the head before the merge
		direct bool              // pushed to main, no pull request
		branch string            // of the pull request, when not change-N
		opener string            // the token that opens it, when not mallory's
		want   string            // in the answer; "" for through the gate
	}{
		{name: "pinbot's success", posts: func(h string) { post(t, forge, repo, h, gate(commitstatus.Success)) }},
		{name: "her success over pinbot's failure", posts: func(h string) {
			post(t, forge, repo, h, gate(commitstatus.Failure))
			post(t, hers, repo, h, gate(commitstatus.Success))
		}, want: "that mallory posted, not pinbot"},
		{name: "pinbot's pending", posts: func(h string) { post(t, forge, repo, h, gate(commitstatus.Pending)) }, want: "said pending"},
		{name: "no gate", posts: func(string) {}, want: "with no pinbot/gate"},
		{name: "a forced promotion", branch: "pinbot/forced/prod/app", opener: srv.Token, posts: func(h string) { post(t, forge, repo, h, gate(commitstatus.Failure)) },
			want: "(a forced promotion, opened by " + srv.AdminUser + ", merged by "},
		// Anyone may name a branch so: hers is no forced promotion.
		{name: "her pull request on a forced branch", branch: "pinbot/forced/prod/web", posts: func(h string) { post(t, forge, repo, h, gate(commitstatus.Failure)) },
			want: "(opened by mallory, merged by "},
		{name: "a direct push", direct: true, want: "which no pull request merged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := map[string]string{"prod/app.yaml": "image: app@sha256:" + string(rune('a'+i)) + "\n"}
			var commit string
			if tc.direct {
				if commit, err = srv.CommitAs(ctx, mallory.Token, repo.Owner, repo.Name, "main", "main", content, "direct"); err != nil {
					t.Fatal(err)
				}
			} else {
				branch, opener := "change-"+string(rune('a'+i)), mallory.Token
				if tc.branch != "" {
					branch = tc.branch
				}
				if tc.opener != "" {
					opener = tc.opener
				}
				head, err := srv.CommitAs(ctx, opener, repo.Owner, repo.Name, "main", branch, content, "change")
				if err != nil {
					t.Fatal(err)
				}
				c, err := srv.ClientAs(ctx, opener)
				if err != nil {
					t.Fatal(err)
				}
				p, _, err := c.CreatePullRequest(repo.Owner, repo.Name, sdk.CreatePullRequestOption{Head: branch, Base: "main", Title: tc.name})
				if err != nil {
					t.Fatal(err)
				}
				tc.posts(head)
				if commit, err = srv.MergePull(ctx, repo.Owner, repo.Name, p.Index); err != nil {
					t.Fatal(err)
				}
			}
			got, err := MergeBypass(ctx, forge, repo, commit)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.want == "" && got != "":
				t.Errorf("mergeBypass = %q, want through the gate", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("mergeBypass = %q, want it to say %q", got, tc.want)
			case tc.want != "" && !tc.direct && !strings.Contains(got, ", merged by "+srv.AdminUser+") merged "):
				t.Errorf("mergeBypass = %q, want it to say who opened and who merged the pull request", got)
			case tc.opener == "" && strings.Contains(got, "forced promotion"):
				t.Errorf("mergeBypass = %q: her pull request is called a forced promotion", got)
			}
		})
	}
}

func post(t *testing.T, g *gitforge.Gitea, repo gitforge.Repo, sha string, st gitforge.Status) {
	t.Helper()
	if err := g.SetStatus(context.Background(), repo, sha, st); err != nil {
		t.Fatal(err)
	}
}

// TestAnswerForged: on real Gitea, a write collaborator posts pinbot/gate
// success over pinbot's failure on a head; pinbot finds the status is
// hers, posts its own failure again (the newest, so the one Gitea shows),
// and says who forged it. Its own standing status, and a head it passed,
// are left alone. Before, pinbot compared only with what it last posted
// and never looked again.
func TestAnswerForged(t *testing.T) {
	r := giteatest.NewInsider(t, map[string]string{"prod/app.yaml": "image: app@sha256:0\n"})
	srv, repo, mallory, forge, hers := r.Srv, r.Repo, r.Mallory, r.Forge, r.Hers
	ctx := context.Background()
	head, err := srv.CommitAs(ctx, mallory.Token, repo.Owner, repo.Name, "main", "held", map[string]string{"prod/app.yaml": "image: app@sha256:c\n"}, "held")
	if err != nil {
		t.Fatal(err)
	}
	const why = "prod: sha256:c is held in prod"
	post(t, forge, repo, head, gitforge.Status{Context: release.PullContext, State: commitstatus.Failure, Description: why})
	if who, err := AnswerForged(ctx, forge, repo, head, commitstatus.Failure, why); err != nil || who != "" {
		t.Fatalf("pinbot's own status: %q, %v; want it left alone", who, err)
	}
	post(t, hers, repo, head, gitforge.Status{Context: release.PullContext, State: commitstatus.Success, Description: "looks fine"})
	who, err := AnswerForged(ctx, forge, repo, head, commitstatus.Failure, why)
	if err != nil || who != mallory.Name {
		t.Fatalf("her success over pinbot's failure: %q, %v; want her named", who, err)
	}
	sts, err := forge.Statuses(ctx, repo, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.Context == release.PullContext && (st.Creator != srv.AdminUser || st.State != commitstatus.Failure) {
			t.Errorf("the head's %s after the answer: %+v, want pinbot's failure", release.PullContext, st)
		}
	}
	if !strings.Contains(ForgedComment(who, commitstatus.Failure, why), "posted by `mallory`, not by pinbot") {
		t.Error("the comment does not name who posted the status")
	}
	post(t, hers, repo, head, gitforge.Status{Context: release.PullContext, State: commitstatus.Success, Description: "looks fine"})
	if who, err := AnswerForged(ctx, forge, repo, head, commitstatus.Success, "admitted"); err != nil || who != "" {
		t.Errorf("a head pinbot passed: %q, %v; want no look", who, err)
	}
}
