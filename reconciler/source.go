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
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
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
func (s *Source) With(ctx context.Context, app *App, auth gitforge.Auth, fn func(Revision) error) error {
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
func (s *Source) fetch(ctx context.Context, app *App, auth gitforge.Auth) (Revision, error) {
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

// credentials returns the Git credentials of app: its own auth, or the
// forge's when the repo lives on the forge's host, or fallbackToken for the
// forge's host when no token file is named. Token files are read on every
// call, so a rotated token is picked up.
func credentials(cfg *Config, app *App, fallbackToken string) (gitforge.Auth, error) {
	if app.Auth != nil {
		tok, err := readToken(app.Auth.TokenFile)
		if err != nil {
			return gitforge.Auth{}, fmt.Errorf("app %s: %w", app.Name, err)
		}
		return gitforge.Auth{Token: tok, CAFile: app.Auth.CAFile}, nil
	}
	if cfg.Forge == nil || !sameHost(cfg.Forge.URL, app.Repo) {
		return gitforge.Auth{}, nil
	}
	tok, err := readToken(cfg.Forge.TokenFile)
	if err != nil {
		return gitforge.Auth{}, fmt.Errorf("forge: %w", err)
	}
	if tok == "" {
		tok = fallbackToken
	}
	return gitforge.Auth{Token: tok, CAFile: cfg.Forge.CAFile}, nil
}

func readToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	return gitforge.ReadToken(file)
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}

// since formats t, when a peer stopped answering, for the "source
// unreachable since <t>" and "kubernetes API unreachable since <t>"
// reasons: a moment (RFC 3339, UTC) rather than a duration, so the reason,
// and the status that carries it, stay the same while the outage lasts.
func since(t time.Time) string { return t.UTC().Format(time.RFC3339) }
