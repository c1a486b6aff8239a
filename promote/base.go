package promote

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
)

// A promotion reads and writes Git objects, never a checkout: the base's
// head is fetched shallow into the object cache (or memory), its pins are
// read from the blobs, the changed blobs and the trees on their paths
// are written, and the commit is pushed. A commit either exists or not,
// so no file is ever half written, and a hostile repository's links and
// odd files never reach the file system (see gitforge.Snapshot).

// gitCache is the object cache of env: the one it shares, one under
// CacheDir, or memory. A CacheDir that cannot be used is warned about,
// and memory used instead: a promotion does not fail for a cache.
func (e *Env) gitCache(ctx context.Context) (*gitforge.Cache, error) {
	if e.Cache != nil {
		return e.Cache, nil
	}
	if e.CacheDir != "" {
		c, err := gitforge.NewCache(e.CacheDir)
		if err == nil {
			e.Cache = c
			return c, nil
		}
		logctx.From(ctx).Warn("cannot use the cache directory; fetching into memory", "dir", e.CacheDir, "error", err.Error())
	}
	c, err := gitforge.NewCache("")
	e.Cache = c
	return c, err
}

// cached is the session of the base's head as the cache last fetched it,
// its config and pins read, or nil when the cache holds none or it does
// not read: what a run can start on while the fetch is under way.
func cached(ctx context.Context, env *Env) *session {
	cache, err := env.gitCache(ctx)
	if err != nil {
		return nil
	}
	repo, err := cache.Repository(env.CloneURL)
	if err != nil {
		return nil
	}
	snap, ok := repo.Cached(env.Base)
	if !ok {
		return nil
	}
	s := &session{env: env, base: snap.Branch(), repo: repo, snap: snap, chooser: newChooser(env.Registry)}
	if s.cfg, err = LoadConfig(snap.FS()); err != nil {
		return nil
	}
	if err := s.scan(ctx); err != nil {
		return nil
	}
	return s
}

// fetch brings the head of the base branch into the session's store; the
// first fetch of a session without a base names it (the default branch).
func (s *session) fetch(ctx context.Context) error {
	start := time.Now()
	snap, err := s.repo.Fetch(ctx, s.base, s.env.Auth)
	if err != nil {
		return err
	}
	s.snap, s.base = snap, snap.Branch()
	took(ctx, "fetched", start, "branch", s.base, "head", snap.Commit())
	return nil
}

// overlay is the base's files with a job's rewrites over them: what the
// next image of a grouped job reads, and what the commit holds.
type overlay struct {
	base  fs.FS
	files map[string][]byte
}

func (o overlay) Open(name string) (fs.File, error) {
	data, ok := o.files[name]
	if !ok {
		return o.base.Open(name)
	}
	info, err := fs.Stat(o.base, name)
	if err != nil {
		return nil, err
	}
	return &memFile{info: info, data: data}, nil
}

// ReadDir lists the base's directory: a job changes files, it adds none.
func (o overlay) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(o.base, name) }

// memFile is a rewritten file of an overlay.
type memFile struct {
	info fs.FileInfo
	data []byte
	off  int
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

func (f *memFile) Read(b []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(b, f.data[f.off:])
	f.off += n
	return n, nil
}

// scan reads the pins of the base, unless they were read from this base
// commit already.
func (s *session) scan(ctx context.Context) error {
	if s.scanned == s.snap.Commit() {
		return nil
	}
	log := logctx.From(ctx)
	start := time.Now()
	opts := []pins.Option{pins.WithWarnings(func(file string, err error) {
		log.Debug("skipping file", "file", file, "reason", err.Error())
	})}
	if s.tagRefs {
		opts = append(opts, pins.WithTagReferences())
	}
	found, err := pins.ScanFS(s.snap.FS(), opts...)
	if err != nil {
		return fmt.Errorf("scanning pins of %s branch %s: %w", s.env.Repo, s.base, err)
	}
	s.pins, s.scanned = found, s.snap.Commit()
	took(ctx, "scanned pins", start, "pins", len(found))
	return nil
}
