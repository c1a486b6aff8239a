package gitforge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"pinbot.dev/pinbot/internal/redact"
)

// ErrNoChanges is returned by Commit when the working tree matches HEAD.
var ErrNoChanges = errors.New("nothing to commit: the working tree matches HEAD")

// ErrPushRejected is returned by Push when the remote branch moved in a way
// that a non-forced push cannot follow (not a fast-forward), or the server
// refused the update. Callers fetch, regenerate and retry.
var ErrPushRejected = errors.New("push rejected")

// pushRef is the local reference Push sends from, so pushing works the same
// whether HEAD is on a branch or detached.
const pushRef = plumbing.ReferenceName("refs/pinbot/push")

// Signature names the author (and committer) of a commit.
type Signature struct {
	Name, Email string
	// When is the commit time; the current time when zero.
	When time.Time
}

// Commit stages every change in the working tree (new, modified and deleted
// files, like `git add -A`), commits it with msg as author and committer,
// and returns the new commit SHA. It returns ErrNoChanges when there is
// nothing to commit.
func (w *Worktree) Commit(msg string, author Signature) (string, error) {
	sha, err := w.commit(msg, author)
	return sha, redact.Error(err)
}

func (w *Worktree) commit(msg string, author Signature) (string, error) {
	if author.Name == "" || author.Email == "" {
		return "", errors.New("committing: the author needs a name and an email")
	}
	when := author.When
	if when.IsZero() {
		when = time.Now()
	}
	sig := &object.Signature{Name: author.Name, Email: author.Email, When: when}
	if h, ok, err := w.quickCommit(msg, sig); ok {
		if err != nil {
			if errors.Is(err, ErrNoChanges) {
				return "", err
			}
			return "", fmt.Errorf("committing in %s: %w", w.dir, err)
		}
		return h.String(), nil
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("committing in %s: %w", w.dir, err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("staging changes in %s: %w", w.dir, err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if errors.Is(err, git.ErrEmptyCommit) {
		return "", ErrNoChanges
	}
	if err != nil {
		return "", fmt.Errorf("committing in %s: %w", w.dir, err)
	}
	w.head = h
	return h.String(), nil
}

// Push sends HEAD to refs/heads/<branch> on the remote. With force it
// replaces whatever the branch held; without it a non-fast-forward update
// fails with ErrPushRejected. Pushing a branch that already holds HEAD is
// not an error.
func (w *Worktree) Push(ctx context.Context, branch string, force bool) error {
	return redact.Error(w.push(ctx, branch, force))
}

func (w *Worktree) push(ctx context.Context, branch string, force bool) error {
	if branch == "" {
		return errors.New("pushing: empty branch name")
	}
	if err := w.repo.Storer.SetReference(plumbing.NewHashReference(pushRef, w.head)); err != nil {
		return fmt.Errorf("pushing %s: %w", branch, err)
	}
	spec := config.RefSpec(fmt.Sprintf("%s:%s", pushRef, plumbing.NewBranchReferenceName(branch)))
	if force {
		spec = "+" + spec
	}
	err := w.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{spec},
		Auth:       w.auth.method(),
		CABundle:   w.caBundle,
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case rejected(err, force):
		return fmt.Errorf("pushing %s to %s: %w: %w", branch, redact.URL(w.url), ErrPushRejected, err)
	}
	return fmt.Errorf("pushing %s to %s: %w", branch, redact.URL(w.url), classify(err))
}

// rejected reports whether a push error means the remote branch moved.
// go-git checks fast-forwards locally; in a shallow clone the remote's old
// commit is often absent, so the check fails with a missing object, which
// equally means "cannot prove this is a fast-forward".
func rejected(err error, force bool) bool {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "non-fast-forward"), strings.Contains(msg, "command error on"):
		return true
	case !force && errors.Is(err, plumbing.ErrObjectNotFound):
		return true
	}
	return false
}

// Fetch updates the working copy to the current head of its remote branch:
// it fetches (shallow), hard-resets HEAD, index and files to it, removes
// untracked files, and returns the new HEAD SHA. Local commits are dropped.
func (w *Worktree) Fetch(ctx context.Context) (string, error) {
	sha, err := w.fetch(ctx)
	return sha, redact.Error(err)
}

func (w *Worktree) fetch(ctx context.Context) (string, error) {
	remoteRef := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, w.branch)
	spec := config.RefSpec(fmt.Sprintf("+%s:%s", plumbing.NewBranchReferenceName(w.branch), remoteRef))
	err := w.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{spec},
		Depth:      1,
		Auth:       w.auth.method(),
		CABundle:   w.caBundle,
		Tags:       git.NoTags,
		Force:      true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", fmt.Errorf("fetching %s from %s: %w", w.branch, redact.URL(w.url), classify(err))
	}
	ref, err := w.repo.Reference(remoteRef, true)
	if err != nil {
		return "", fmt.Errorf("fetching %s from %s: %w", w.branch, redact.URL(w.url), classify(err))
	}
	if ok, err := w.quickReset(ref.Hash()); ok {
		if err != nil {
			return "", fmt.Errorf("resetting %s to %s: %w", w.dir, ref.Hash(), err)
		}
		return w.head.String(), nil
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("resetting %s: %w", w.dir, err)
	}
	if err := wt.Reset(&git.ResetOptions{Commit: ref.Hash(), Mode: git.HardReset}); err != nil {
		return "", fmt.Errorf("resetting %s to %s: %w", w.dir, ref.Hash(), err)
	}
	if err := wt.Clean(&git.CleanOptions{Dir: true}); err != nil {
		return "", fmt.Errorf("cleaning %s: %w", w.dir, err)
	}
	w.head = ref.Hash()
	return w.head.String(), nil
}
