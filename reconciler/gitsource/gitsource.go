// Package gitsource fetches the branches the reconciler applies and
// verifies into one object cache on disk, and hands out each fetched
// commit as a read-only file tree.
package gitsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/coalesce"
	"pinbot.dev/pinbot/internal/redact"
)

// Error means Git could not be fetched or read. The Reconciler then
// reports the app Unknown and applies nothing until the source is back.
type Error struct {
	Repo string // redacted URL
	Err  error
}

// Error names the object or file and the cause.
func (e *Error) Error() string { return fmt.Sprintf("source %s: %s", e.Repo, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Revision is one fetched commit of an app's branch, read straight from
// Git's objects: there is no checkout, so no file of the repository is
// ever written to disk, and its links are never followed (see
// gitforge.Snapshot).
type Revision struct {
	Commit string
	FS     fs.FS
}

// Source fetches apps' branches into a shared object cache (on disk under
// the cache directory, so a pass fetches only what changed). It is safe
// for concurrent use: a Revision is immutable, so a render never sees a
// tree half updated.
type Source struct {
	cache *gitforge.Cache
	// heads are Recent's fetches, by repository, branch and credentials.
	heads coalesce.Fresh[*gitforge.Snapshot]
}

// New returns a Source over cache.
func New(cache *gitforge.Cache) *Source {
	return &Source{cache: cache, heads: coalesce.Fresh[*gitforge.Snapshot]{Keep: Slack}}
}

// Slack is how much older than its call a head Recent answers with.
const Slack = 5 * time.Second

// Recent is Head for a pass on its interval, which a head fetched up to
// Slack before it asked does as well as its own: the thousands of apps
// of one repository passing together then share a fetch every few
// seconds instead of queueing for one each. A pass a push woke uses Head.
func (s *Source) Recent(ctx context.Context, repoURL, branch string, auth gitforge.Auth, fn func(Revision) error) error {
	repo, err := s.cache.Repository(repoURL)
	if err != nil {
		return &Error{Repo: redact.URL(repoURL), Err: err}
	}
	who := sha256.Sum256([]byte(auth.Username + "\x00" + auth.Token + "\x00" + auth.CAFile))
	key := repoURL + "\x00" + branch + "\x00" + hex.EncodeToString(who[:])
	snap, err := s.heads.DoSince(ctx, key, time.Now().Add(-Slack), func(ctx context.Context) (*gitforge.Snapshot, error) {
		return repo.Fetch(ctx, branch, auth)
	})
	if err != nil {
		return &Error{Repo: redact.URL(repoURL), Err: err}
	}
	own := *snap // as gitforge hands each caller of a shared fetch its copy
	return fn(Revision{Commit: own.Commit(), FS: own.FS()})
}

// DefaultCacheDir is $XDG_CACHE_HOME/pinbot or its platform equivalent.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory: %w", err)
	}
	return filepath.Join(d, "pinbot"), nil
}

// Head fetches the head of repo's branch and calls fn with it. Fetch
// failures are *Error.
func (s *Source) Head(ctx context.Context, repoURL, branch string, auth gitforge.Auth, fn func(Revision) error) error {
	repo, err := s.cache.Repository(repoURL)
	if err != nil {
		return &Error{Repo: redact.URL(repoURL), Err: err}
	}
	snap, err := repo.Fetch(ctx, branch, auth)
	if err != nil {
		return &Error{Repo: redact.URL(repoURL), Err: err}
	}
	return fn(Revision{Commit: snap.Commit(), FS: snap.FS()})
}

// At is Head of commit, which must be in the branch's history
// (gitforge.ErrCommitNotFound, not an *Error, when it is not).
func (s *Source) At(ctx context.Context, repoURL, branch, commit string, auth gitforge.Auth, fn func(Revision) error) error {
	repo, err := s.cache.Repository(repoURL)
	if err != nil {
		return &Error{Repo: redact.URL(repoURL), Err: err}
	}
	snap, err := repo.FetchCommit(ctx, branch, commit, auth)
	if errors.Is(err, gitforge.ErrCommitNotFound) {
		return err
	}
	if err != nil {
		return &Error{Repo: redact.URL(repoURL), Err: err}
	}
	return fn(Revision{Commit: snap.Commit(), FS: snap.FS()})
}
