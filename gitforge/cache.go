package gitforge

import (
	"time"

	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"pinbot.dev/pinbot/internal/private"
	"pinbot.dev/pinbot/internal/redact"
)

// Cache holds the Git objects pinbot fetched, one bare object store per
// repository URL, with no working copy: on disk under a directory of
// pinbot's own (so a warm run fetches only what changed), or in memory.
// Promotions and the reconciler share one under `pinbot serve`. It is safe
// for concurrent use.
type Cache struct {
	dir string // "" keeps everything in memory

	mu    sync.Mutex
	repos map[string]*Repository
}

// NewCache returns a cache under dir, or in memory when dir is "". dir is
// made private (see internal/private): a cache another user could write to
// would let them choose what pinbot reads and pushes.
func NewCache(dir string) (*Cache, error) {
	if dir != "" {
		if err := private.Dir(dir); err != nil {
			return nil, err
		}
	}
	return &Cache{dir: dir, repos: map[string]*Repository{}}, nil
}

// Repository returns the store of the repository at url, opening it on
// first use. Credentials in url do not tell two stores apart.
func (c *Cache) Repository(url string) (*Repository, error) {
	key := RepoKey(url)
	if key == "" {
		key = url
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.repos[key]; r != nil {
		return r, nil
	}
	r := &Repository{url: url}
	if c.dir != "" {
		sum := sha256.Sum256([]byte(key))
		r.dir = filepath.Join(c.dir, "git", hex.EncodeToString(sum[:12])+".git")
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	c.repos[key] = r
	return r, nil
}

// objectCache bounds go-git's cache of decoded objects: a snapshot's
// trees are kept decoded apart (see Repository.tree), and a blob is read
// once per walk, so go-git's default of 96 MiB only grew the heap.
const objectCache = 1 * cache.MiByte

// open opens the repository's store: in memory, or the bare directory.
func (r *Repository) open() error {
	r.trees = nil
	if r.dir == "" {
		r.st = memory.NewStorage()
		return nil
	}
	if err := private.Dir(r.dir); err != nil {
		return err
	}
	// Pack files stay open: a walk reads thousands of objects, and
	// opening the pack for each was most of reading a snapshot.
	r.st = filesystem.NewStorageWithOptions(osfs.New(r.dir), cache.NewObjectLRU(objectCache), filesystem.Options{KeepDescriptors: true})
	return nil
}

// reset empties a damaged store. The caller holds r.mu (and the file
// lock of a store on disk).
func (r *Repository) reset() error {
	r.latest = nil // its snapshots were of the old store
	if r.dir != "" {
		if err := os.RemoveAll(r.dir); err != nil {
			return fmt.Errorf("removing the damaged object cache %s: %w", r.dir, err)
		}
	}
	return r.open()
}

// Repository is the object store of one remote repository. Its
// operations take turns; fetches and pushes take turns with other pinbot
// processes on the same cache too (a file lock).
type Repository struct {
	url string
	dir string // "" in memory

	mu    sync.Mutex // guards st, trees and latest: go-git's storage is not safe for concurrent use
	st    storage.Storer
	trees map[plumbing.Hash]*decodedTree // decoded once (see tree)
	// latest is the last fetch of each branch, by the credentials it was
	// fetched with (fetch coalesces on it).
	latest map[fetchKey]fetched
}

type fetchKey struct {
	branch string
	auth   Auth
}

type fetched struct {
	began time.Time
	snap  *Snapshot
}

// URL is the repository's URL, credentials redacted.
func (r *Repository) URL() string { return redact.URL(r.url) }
