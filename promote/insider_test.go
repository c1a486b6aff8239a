package promote

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/promote/pr"
)

// The insider suite of promote: a collaborator who may write to the
// manifest repository, and no more, tries to have pinbot adopt her
// commit as its own pull request. Each case failed before pinbot compared
// the author and the head commit (pinbot kept her pull request as "the
// same proposal, same head").

// insider is a write collaborator of f's repository.
func (f *fixture) insider(name string) gitea.User {
	f.t.Helper()
	ctx := context.Background()
	// Gitea's user names are short: the repository's number keeps it unique.
	u, err := f.srv.CreateUser(ctx, name+f.name[strings.LastIndex(f.name, "-"):])
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.srv.AddWriter(ctx, f.owner, f.name, u.Name); err != nil {
		f.t.Fatal(err)
	}
	return u
}

// insiderRepo is a repository whose one pin of app is v1, with v2 (the
// digest CI promotes) and bad (the one the insider wants in) pushed.
func insiderRepo(t *testing.T) (f *fixture, app, v1, v2, bad string) {
	f = newFixture(t)
	app = f.image("app")
	v1 = f.pushImage(app, "v1", time.Time{})
	v2 = f.pushImage(app, "v2", time.Time{})
	bad = f.pushImage(app, "bad", time.Time{})
	f.createRepo(map[string]string{"deploy/app.yaml": fmt.Sprintf("image: %s:v1@%s\n", app, v1)})
	return f, app, v1, v2, bad
}

func (f *fixture) promoteV2(app, v2 string) Result {
	f.t.Helper()
	res, err := Run(context.Background(), f.env(), Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceDigestFile}}})
	if err != nil || len(res) != 1 {
		f.t.Fatalf("promoting v2: %v, %+v", err, res)
	}
	return res[0]
}

// forgedBody is the text pinbot would write for meta, claiming head.
func forgedBody(meta pr.Meta, head string) string {
	meta.Head = head
	return pr.RenderBody(pr.Proposal{Meta: meta})
}

func TestInsiderPullRequestOnPinbotsBranchIsNotAdopted(t *testing.T) {
	f, app, _, v2, bad := insiderRepo(t)
	ctx := context.Background()
	mallory := f.insider("mallory")
	dry, err := Run(ctx, f.env(), Request{DryRun: true, Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceDigestFile}}})
	if err != nil || len(dry) != 1 {
		t.Fatalf("dry run: %v, %+v", err, dry)
	}
	branch := dry[0].Branch

	// She pushes the bad digest to the branch pinbot will use, and opens a
	// pull request whose text is pinbot's proposal of v2 at her head.
	head, err := f.srv.CommitAs(ctx, mallory.Token, f.owner, f.name, "main", branch,
		map[string]string{"deploy/app.yaml": fmt.Sprintf("image: %s:v2@%s\n", app, bad)}, "Promote app to v2")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.srv.ClientAs(ctx, mallory.Token)
	if err != nil {
		t.Fatal(err)
	}
	hers, _, err := c.CreatePullRequest(f.owner, f.name, sdk.CreatePullRequestOption{
		Head: branch, Base: "main", Title: pr.Title(dry[0].Meta), Body: forgedBody(dry[0].Meta, head),
	})
	if err != nil {
		t.Fatal(err)
	}

	got := f.promoteV2(app, v2)
	if got.Pull == nil || got.Pull.Number == hers.Index || got.Status != StatusOpened {
		t.Fatalf("promotion: status %s, pull %+v; want pinbot's own pull request opened, not #%d adopted", got.Status, got.Pull, hers.Index)
	}
	if got.Pull.Author != f.srv.AdminUser {
		t.Errorf("the promotion's pull request was opened by %q, want pinbot's account %q", got.Pull.Author, f.srv.AdminUser)
	}
	if pinned := f.file(branch, "deploy/app.yaml"); !strings.Contains(pinned, v2) {
		t.Errorf("branch %s pins %q, want v2 %s", branch, pinned, v2)
	}
	if got.Meta.Head == head {
		t.Errorf("pinbot's pull request is at her commit %s", head)
	}
	closed, _, err := f.sdk().GetPullRequest(f.owner, f.name, hers.Index)
	if err != nil {
		t.Fatal(err)
	}
	if closed.State != sdk.StateClosed || closed.HasMerged {
		t.Errorf("her pull request #%d is %s (merged %v), want closed unmerged", hers.Index, closed.State, closed.HasMerged)
	}
	comments, err := f.forge.Comments(ctx, f.repo, hers.Index)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) == 0 || !strings.Contains(comments[len(comments)-1], "not by pinbot's account") {
		t.Errorf("her pull request's comments %q do not say why pinbot closed it", comments)
	}
}

func TestInsiderPushOntoPinbotsPullRequestIsPushedOver(t *testing.T) {
	f, app, _, v2, bad := insiderRepo(t)
	ctx := context.Background()
	mallory := f.insider("mallory")
	first := f.promoteV2(app, v2)
	if first.Status != StatusOpened {
		t.Fatalf("first promotion: %s", first.Status)
	}

	// She pushes the bad digest onto pinbot's branch and edits the text of
	// pinbot's pull request to describe her head.
	head, err := f.srv.CommitAs(ctx, mallory.Token, f.owner, f.name, first.Branch, first.Branch,
		map[string]string{"deploy/app.yaml": fmt.Sprintf("image: %s:v2@%s\n", app, bad)}, "tweak")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.srv.ClientAs(ctx, mallory.Token)
	if err != nil {
		t.Fatal(err)
	}
	body := forgedBody(first.Meta, head)
	if _, _, err := c.EditPullRequest(f.owner, f.name, first.Pull.Number, sdk.EditPullRequestOption{Body: &body}); err != nil {
		t.Fatalf("a writer edits pinbot's pull request: %s", err)
	}
	waitPullHead(t, f, first.Pull.Number, head)

	again := f.promoteV2(app, v2)
	if again.Status == StatusUnchanged || again.Meta.Head == head {
		t.Fatalf("promoting again: status %s at %s; want pinbot's commit pushed over hers (%s)", again.Status, again.Meta.Head, head)
	}
	if pinned := f.file(first.Branch, "deploy/app.yaml"); !strings.Contains(pinned, v2) || strings.Contains(pinned, bad) {
		t.Errorf("branch pins %q, want v2 %s", pinned, v2)
	}
	if again.Pull == nil || again.Pull.Number != first.Pull.Number {
		t.Errorf("pull request %+v, want #%d kept (pinbot opened it)", again.Pull, first.Pull.Number)
	}

	// pinbot's own head, as pushed, is kept as it is.
	third := f.promoteV2(app, v2)
	if third.Status != StatusUnchanged || third.Meta.Head != again.Meta.Head {
		t.Errorf("third promotion: status %s at %s, want unchanged at %s", third.Status, third.Meta.Head, again.Meta.Head)
	}
}

// waitPullHead waits until Gitea records head as pull request number's.
func waitPullHead(t *testing.T, f *fixture, number int64, head string) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("#%d at %s", number, head), func() (bool, string) {
		p, err := f.forge.GetPull(context.Background(), f.repo, number)
		if err != nil {
			t.Fatal(err)
		}
		return p.HeadSHA == head, "at " + p.HeadSHA
	})
}
