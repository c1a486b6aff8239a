package promote

import (
	"context"
	"fmt"
	"os"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
)

// remoteHead returns the commit branch points at on the remote now, as
// `git ls-remote` does: one request, and the working copy is left alone.
// (gitforge.Worktree.Fetch answers this too, but also resets and cleans the
// whole working copy, which costs more than the rest of a promotion.)
func remoteHead(ctx context.Context, url, branch string, auth gitforge.Auth) (string, error) {
	opts := &git.ListOptions{}
	if auth.Token != "" {
		user := auth.Username
		if user == "" {
			user = gitforge.DefaultUsername
		}
		opts.Auth = &githttp.BasicAuth{Username: user, Password: auth.Token}
	}
	if auth.CAFile != "" {
		pem, err := os.ReadFile(auth.CAFile)
		if err != nil {
			return "", fmt.Errorf("reading CA bundle: %w", err)
		}
		opts.CABundle = pem
	}
	r := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}})
	refs, err := r.ListContext(ctx, opts)
	if err != nil {
		return "", redact.Error(fmt.Errorf("listing the branches of %s: %w", redact.URL(url), err))
	}
	want := plumbing.NewBranchReferenceName(branch)
	for _, ref := range refs {
		if ref.Name() == want {
			return ref.Hash().String(), nil
		}
	}
	return "", fmt.Errorf("listing the branches of %s: %w: %s", redact.URL(url), gitforge.ErrBranchNotFound, branch)
}
