package gitforge

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"pinbot.dev/pinbot/internal/redact"
)

// RemoteHead returns the commit branch points at on the remote at url now,
// as `git ls-remote` does: one request, and no working copy is touched.
// (Worktree.Fetch answers this too, but also resets and cleans the whole
// working copy.) A branch the remote lacks is ErrBranchNotFound.
func RemoteHead(ctx context.Context, url, branch string, auth Auth) (string, error) {
	head, err := remoteHead(ctx, url, branch, auth)
	return head, redact.Error(err)
}

func remoteHead(ctx context.Context, url, branch string, auth Auth) (string, error) {
	redact.Register(auth.Token)
	pem, err := auth.caBundle()
	if err != nil {
		return "", err
	}
	r := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}})
	refs, err := r.ListContext(ctx, &git.ListOptions{Auth: auth.method(), CABundle: pem})
	if err != nil {
		return "", fmt.Errorf("listing the branches of %s: %w", redact.URL(url), classify(err))
	}
	want := plumbing.NewBranchReferenceName(branch)
	for _, ref := range refs {
		if ref.Name() == want {
			return ref.Hash().String(), nil
		}
	}
	return "", fmt.Errorf("listing the branches of %s: %w: %s", redact.URL(url), ErrBranchNotFound, branch)
}
