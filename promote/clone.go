package promote

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/filelock"
	"pinbot.dev/pinbot/internal/logctx"
)

// cacheDirFor is where the clone of base of cloneURL is cached under root:
// <root>/clones/<host>/<path>/<base>, every segment made file-name safe.
func cacheDirFor(root, cloneURL, base string) string {
	parts := []string{root, "clones"}
	if u, err := url.Parse(cloneURL); err == nil && u.Host != "" {
		parts = append(parts, safeName(u.Host))
		for _, seg := range strings.Split(strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), "/") {
			parts = append(parts, safeName(seg))
		}
	} else {
		parts = append(parts, safeName(cloneURL))
	}
	return filepath.Join(append(parts, safeName(base))...)
}

func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
	if s == "" || s == "." || s == ".." {
		return "_" + s
	}
	return s
}

// clone gives the session its working copy of the base branch: a fresh
// temporary clone, or with env.CacheDir the cached clone brought up to date
// (fetch and hard reset) and locked against other pinbot processes until
// the session closes. A cached clone that cannot be reused is cloned again.
func (s *session) clone(ctx context.Context) error {
	start := time.Now()
	cache := s.env.CacheDir
	var unlock func()
	if cache != "" {
		var err error
		if unlock, err = s.lockCache(ctx); err != nil {
			if ctx.Err() != nil {
				return err
			}
			logctx.From(ctx).Warn("cannot use the clone cache; cloning into a temporary directory", "error", err.Error())
			cache = ""
		}
	}
	if cache == "" {
		dir, err := os.MkdirTemp(s.env.WorkDir, "pinbot-clone-")
		if err != nil {
			return fmt.Errorf("making a clone directory: %w", err)
		}
		s.dir, s.cleanup = dir, func() { _ = os.RemoveAll(dir) }
		if s.w, err = gitforge.Clone(ctx, s.env.CloneURL, s.base, dir, s.env.Auth); err != nil {
			return err
		}
		took(ctx, "cloned", start, "branch", s.base, "head", s.w.Head())
		return nil
	}
	dir := cacheDirFor(cache, s.env.CloneURL, s.base)
	s.dir, s.cleanup = dir, unlock
	var err error
	s.w, err = gitforge.Clone(ctx, s.env.CloneURL, s.base, dir, s.env.Auth)
	if err != nil && ctx.Err() == nil {
		if _, statErr := os.Stat(filepath.Join(dir, ".git")); statErr == nil {
			logctx.From(ctx).Info("cached clone unusable; cloning afresh", "dir", dir, "error", err.Error())
			if rmErr := os.RemoveAll(dir); rmErr != nil {
				return fmt.Errorf("removing the unusable cached clone %s: %w", dir, rmErr)
			}
			s.w, err = gitforge.Clone(ctx, s.env.CloneURL, s.base, dir, s.env.Auth)
		}
	}
	if err != nil {
		return err
	}
	took(ctx, "cloned (cached)", start, "branch", s.base, "head", s.w.Head(), "dir", dir)
	return nil
}

// lockCache makes the cached clone's directory and locks it.
func (s *session) lockCache(ctx context.Context) (func(), error) {
	dir := cacheDirFor(s.env.CacheDir, s.env.CloneURL, s.base)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("making the clone cache: %w", err)
	}
	unlock, err := filelock.Lock(ctx, dir+".lock")
	if err != nil {
		return nil, fmt.Errorf("locking the cached clone %s: %w", dir, err)
	}
	return unlock, nil
}
