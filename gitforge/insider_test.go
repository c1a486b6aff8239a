package gitforge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

// TestMergeOnlyTheJudgedHead: pinbot merges a pull request only at the
// head it judged. A writer who pushes to the branch after the gate passed
// gets ErrHeadMoved, not a merge of her commit.
func TestMergeOnlyTheJudgedHead(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	g := newGitea(t, srv)
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	judged := pushBranch(t, srv, repo, "pinbot/prod/app", "v: 1\n")
	pr, err := g.CreatePull(ctx, repo, gitforge.Pull{Head: "pinbot/prod/app", Base: "main", Title: "Promote app"})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Author != srv.AdminUser {
		t.Errorf("Author = %q, want %q", pr.Author, srv.AdminUser)
	}
	if self, err := g.Self(ctx); err != nil || self != srv.AdminUser {
		t.Errorf("Self = %q, %v; want %q", self, err, srv.AdminUser)
	}
	moved, err := srv.Commit(ctx, repo.Owner, repo.Name, "pinbot/prod/app", "pinbot/prod/app", map[string]string{"f.yaml": "v: evil\n"}, "tweak")
	if err != nil {
		t.Fatal(err)
	}
	err = mergeOnceChecked(t, g, repo, pr.Number, judged)
	if !errors.Is(err, gitforge.ErrHeadMoved) {
		t.Fatalf("merging at the judged head after a push: %v, want ErrHeadMoved", err)
	}
	if got, err := g.GetPull(ctx, repo, pr.Number); err != nil || got.Merged {
		t.Fatalf("after the refused merge: %+v, %v; want it open", got, err)
	}
	if err := g.MergePull(ctx, repo, pr.Number, "", "merge"); err == nil {
		t.Error("merging with no head succeeded")
	}
	if err := mergeOnceChecked(t, g, repo, pr.Number, moved); err != nil {
		t.Fatalf("merging at the current head: %v", err)
	}
}

// mergeOnceChecked merges number at head, asking again for up to 30 s
// while Gitea still checks the pull request's new head (ErrNotMergeable).
func mergeOnceChecked(t *testing.T, g *gitforge.Gitea, repo gitforge.Repo, number int64, head string) error {
	t.Helper()
	var err error
	poll.Until(t, 30*time.Second, "Gitea's answer to a merge", func() (bool, string) {
		err = g.MergePull(context.Background(), repo, number, head, "merge")
		return !errors.Is(err, gitforge.ErrNotMergeable), fmt.Sprint(err)
	})
	return err
}
