package reconciler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/config"
)

// SourceError means Git could not be fetched or read. The Reconciler then
// reports the app Unknown and applies nothing until the source is back.
type SourceError struct {
	Repo string // redacted URL
	Err  error
}

// Error names the object or file and the cause.
func (e *SourceError) Error() string { return fmt.Sprintf("source %s: %s", e.Repo, e.Err) }

// Unwrap returns the cause.
func (e *SourceError) Unwrap() error { return e.Err }

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
}

// NewSource returns a Source over cache.
func NewSource(cache *gitforge.Cache) *Source { return &Source{cache: cache} }

// DefaultCacheDir is $XDG_CACHE_HOME/pinbot or its platform equivalent.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory: %w", err)
	}
	return filepath.Join(d, "pinbot"), nil
}

// With fetches the head of app's branch and calls fn with it. Fetch
// failures are *SourceError.
func (s *Source) With(ctx context.Context, app *config.App, auth gitforge.Auth, fn func(Revision) error) error {
	repo, err := s.cache.Repository(app.Repo)
	if err != nil {
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	snap, err := repo.Fetch(ctx, app.Branch, auth)
	if err != nil {
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	return fn(Revision{Commit: snap.Commit(), FS: snap.FS()})
}

// withCommit is With of commit, which must be in the branch's history
// (gitforge.ErrCommitNotFound, not a *SourceError, when it is not).
func (s *Source) withCommit(ctx context.Context, app *config.App, commit string, auth gitforge.Auth, fn func(Revision) error) error {
	repo, err := s.cache.Repository(app.Repo)
	if err != nil {
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	snap, err := repo.FetchCommit(ctx, app.Branch, commit, auth)
	if errors.Is(err, gitforge.ErrCommitNotFound) {
		return err
	}
	if err != nil {
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	return fn(Revision{Commit: snap.Commit(), FS: snap.FS()})
}

// auth returns the Git credentials of app: its own auth, or the forge's
// when the repo lives on the forge's host (its tokenFile, else the token
// of WithForgeToken, else $PINBOT_GITEA_TOKEN). Token files are read on
// every call, so a rotated token is picked up.
func (r *Reconciler) auth(app *config.App) (gitforge.Auth, error) {
	if app.Auth != nil {
		tok := ""
		if app.Auth.TokenFile != "" {
			var err error
			if tok, err = gitforge.ReadToken(app.Auth.TokenFile); err != nil {
				return gitforge.Auth{}, fmt.Errorf("app %s: %w", app.Name, err)
			}
		}
		return gitforge.Auth{Token: tok, CAFile: app.Auth.CAFile}, nil
	}
	f := r.cfg.Forge
	if f == nil || !sameHost(f.URL, app.Repo) {
		return gitforge.Auth{}, nil
	}
	tok := r.token
	if f.TokenFile != "" || tok == "" {
		var err error
		if tok, err = gitforge.ResolveToken(f.TokenFile); err != nil {
			return gitforge.Auth{}, fmt.Errorf("forge: %w", err)
		}
	}
	return gitforge.Auth{Token: tok, CAFile: f.CAFile}, nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}
