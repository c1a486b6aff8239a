package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	sdk "code.gitea.io/sdk/gitea"
)

// releaseFloor measures what Gitea itself takes to do what an onward or
// rollback pull request needs, in the same run: push a one-line commit to
// a new branch with the git CLI, then open a pull request with one API
// call. Each pull request is closed after. It returns the whole of each,
// and the API call's part.
func (b *releaseBench) releaseFloor(ctx context.Context, n int) (whole, open []time.Duration, err error) {
	dir := filepath.Join(b.tmp, "floor")
	git := func(args ...string) error { return gitAs(ctx, dir, "floor", b.gitea.AdminUser, b.gitea.Token, args...) }
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if err := git("clone", "--quiet", "--depth", "1", "--branch", "main", b.gitea.RepoURL(b.owner, releaseRepo), "."); err != nil {
		return nil, nil, err
	}
	c, err := b.gitea.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := range n {
		branch := fmt.Sprintf("floor-%d", i)
		if err := git("checkout", "--quiet", "-B", branch, "origin/main"); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "floor.txt"), fmt.Appendf(nil, "%d\n", i), 0o644); err != nil {
			return nil, nil, err
		}
		if err := git("add", "floor.txt"); err != nil {
			return nil, nil, err
		}
		if err := git("commit", "--quiet", "-m", "floor "+branch); err != nil {
			return nil, nil, err
		}
		start := time.Now()
		if err := git("push", "--quiet", "origin", branch); err != nil {
			return nil, nil, err
		}
		pushed := time.Now()
		pr, _, err := c.CreatePullRequest(b.owner, releaseRepo, sdk.CreatePullRequestOption{Head: branch, Base: "main", Title: "floor " + branch})
		if err != nil {
			return nil, nil, fmt.Errorf("opening the floor's pull request: %w", err)
		}
		whole, open = append(whole, time.Since(start)), append(open, time.Since(pushed))
		closed := sdk.StateClosed
		if _, _, err := c.EditPullRequest(b.owner, releaseRepo, pr.Index, sdk.EditPullRequestOption{State: &closed}); err != nil {
			return nil, nil, err
		}
	}
	return whole, open, nil
}
