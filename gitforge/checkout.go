package gitforge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"pinbot.dev/pinbot/internal/redact"
)

// ErrCommitNotFound means the commit is not in the branch's history on the
// remote.
var ErrCommitNotFound = errors.New("commit not found in the branch's history")

// CheckoutCommit makes dir a working copy of commit, an ancestor of (or
// equal to) the head of branch at url, and returns dir. Unlike Clone, the
// clone in dir holds the branch's whole history, so an older commit can be
// checked out; dir can be an on-disk cache kept per (url, branch): a clone
// already there is fetched, not cloned again. A commit the branch's
// history lacks is ErrCommitNotFound.
func CheckoutCommit(ctx context.Context, url, branch, commit, dir string, auth Auth) error {
	return redact.Error(checkoutCommit(ctx, url, branch, commit, dir, auth))
}

func checkoutCommit(ctx context.Context, url, branch, commit, dir string, auth Auth) error {
	if url == "" || branch == "" || commit == "" || dir == "" {
		return fmt.Errorf("checking out %s of %s branch %s into %q: empty argument", commit, redact.URL(url), branch, dir)
	}
	redact.Register(auth.Token)
	pem, err := auth.caBundle()
	if err != nil {
		return err
	}
	ref := plumbing.NewBranchReferenceName(branch)
	var repo *git.Repository
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		if repo, err = git.PlainOpen(dir); err != nil {
			return fmt.Errorf("opening cached clone %s: %w", dir, err)
		}
		remote, err := repo.Remote(git.DefaultRemoteName)
		if err != nil || len(remote.Config().URLs) == 0 || remote.Config().URLs[0] != url {
			return fmt.Errorf("opening cached clone %s: it is not a clone of %s", dir, redact.URL(url))
		}
	}
	hash := plumbing.NewHash(commit)
	if repo == nil {
		repo, err = git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
			URL: url, Auth: auth.method(), ReferenceName: ref, SingleBranch: true,
			Tags: git.NoTags, CABundle: pem, NoCheckout: true,
		})
		if err != nil {
			_ = os.RemoveAll(filepath.Join(dir, ".git"))
			return fmt.Errorf("cloning %s branch %s: %w", redact.URL(url), branch, classify(err))
		}
	} else if _, err := repo.CommitObject(hash); err != nil {
		spec := config.RefSpec(fmt.Sprintf("+%s:%s", ref, plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)))
		err := repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: git.DefaultRemoteName, RefSpecs: []config.RefSpec{spec},
			Auth: auth.method(), CABundle: pem, Tags: git.NoTags, Force: true,
		})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return fmt.Errorf("fetching %s from %s: %w", branch, redact.URL(url), classify(err))
		}
	}
	if _, err := repo.CommitObject(hash); err != nil {
		return fmt.Errorf("%s branch %s: %s: %w", redact.URL(url), branch, commit, ErrCommitNotFound)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("checking out %s in %s: %w", commit, dir, err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: hash, Force: true}); err != nil {
		return fmt.Errorf("checking out %s in %s: %w", commit, dir, err)
	}
	if err := wt.Clean(&git.CleanOptions{Dir: true}); err != nil {
		return fmt.Errorf("cleaning %s: %w", dir, err)
	}
	return nil
}

// DefaultBranch returns the branch the remote's HEAD names, as `git
// ls-remote --symref url HEAD` does: what Argo CD follows for a
// targetRevision of HEAD. A remote that advertises no symbolic HEAD is
// answered by the branch whose commit HEAD is ("main" or "master" first).
func DefaultBranch(ctx context.Context, url string, auth Auth) (string, error) {
	b, err := defaultBranch(ctx, url, auth)
	return b, redact.Error(err)
}

func defaultBranch(ctx context.Context, url string, auth Auth) (string, error) {
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
	var head *plumbing.Reference
	byHash := map[plumbing.Hash][]string{}
	for _, ref := range refs {
		switch {
		case ref.Name() == plumbing.HEAD:
			head = ref
		case ref.Name().IsBranch() && ref.Type() == plumbing.HashReference:
			byHash[ref.Hash()] = append(byHash[ref.Hash()], ref.Name().Short())
		}
	}
	switch {
	case head == nil:
		return "", fmt.Errorf("listing the branches of %s: %w: the remote has no HEAD", redact.URL(url), ErrBranchNotFound)
	case head.Type() == plumbing.SymbolicReference && head.Target().IsBranch():
		return head.Target().Short(), nil
	}
	names := byHash[head.Hash()]
	sort.Slice(names, func(i, j int) bool {
		return rank(names[i]) < rank(names[j]) || rank(names[i]) == rank(names[j]) && names[i] < names[j]
	})
	if len(names) == 0 {
		return "", fmt.Errorf("listing the branches of %s: %w: no branch is at HEAD", redact.URL(url), ErrBranchNotFound)
	}
	return names[0], nil
}

func rank(branch string) int {
	switch branch {
	case "main":
		return 0
	case "master":
		return 1
	}
	return 2
}
