package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

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

// Revision is one fetched commit of an app's branch, checked out on disk.
type Revision struct {
	Commit string
	Dir    string // root of the working copy
}

// Source keeps one cached clone per app under a cache directory and
// fetches it on demand. It is safe for concurrent use; calls for one app
// are serialised, so a render never sees a working copy half reset.
type Source struct {
	dir string

	mu    sync.Mutex
	apps  map[string]*sync.Mutex
	trees map[string]*gitforge.Worktree
}

// NewSource returns a Source caching clones under dir.
func NewSource(dir string) *Source {
	return &Source{dir: dir, apps: map[string]*sync.Mutex{}, trees: map[string]*gitforge.Worktree{}}
}

// DefaultCacheDir is $XDG_CACHE_HOME/pinbot or its platform equivalent.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory: %w", err)
	}
	return filepath.Join(d, "pinbot"), nil
}

// With fetches app's branch into its cached clone and calls fn with the
// checked-out revision, holding the app's lock so the working copy does not
// change under fn. Fetch failures are *SourceError.
func (s *Source) With(ctx context.Context, app *config.App, auth gitforge.Auth, fn func(Revision) error) error {
	lock := s.lock(app.Name)
	lock.Lock()
	defer lock.Unlock()
	rev, err := s.fetch(ctx, app, auth)
	if err != nil {
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	return fn(rev)
}

func (s *Source) lock(app string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps[app] == nil {
		s.apps[app] = &sync.Mutex{}
	}
	return s.apps[app]
}

// fetch brings the cached clone up to date, cloning it the first time. The
// directory name hashes the URL and branch, so a changed config never reuses
// another repository's clone.
func (s *Source) fetch(ctx context.Context, app *config.App, auth gitforge.Auth) (Revision, error) {
	s.mu.Lock()
	w := s.trees[app.Name]
	s.mu.Unlock()
	if w != nil && w.Branch() == app.Branch {
		sha, err := w.Fetch(ctx)
		if err != nil {
			return Revision{}, err
		}
		return Revision{Commit: sha, Dir: w.Dir()}, nil
	}
	sum := sha256.Sum256([]byte(app.Repo + "\x00" + app.Branch))
	dir := filepath.Join(s.dir, "git", app.Name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Revision{}, fmt.Errorf("creating the clone cache: %w", err)
	}
	w, err := gitforge.Clone(ctx, app.Repo, app.Branch, dir, auth)
	if err != nil {
		return Revision{}, err
	}
	s.mu.Lock()
	s.trees[app.Name] = w
	s.mu.Unlock()
	return Revision{Commit: w.Head(), Dir: w.Dir()}, nil
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
