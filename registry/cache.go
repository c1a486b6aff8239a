package registry

import (
	"maps"
	"slices"
	"sync"
)

// describeCacheSize bounds the digests whose Describe result a Client
// keeps. An entry is some hundreds of bytes.
const describeCacheSize = 4096

// imageCache keeps what Describe learnt per repository@digest. What a
// digest names never changes, so entries never go stale; when the cache is
// full an arbitrary entry makes room.
type imageCache struct {
	mu    sync.Mutex
	max   int
	byKey map[string]Image
}

func newImageCache(n int) *imageCache {
	return &imageCache{max: n, byKey: map[string]Image{}}
}

// get returns a copy of the entry for repository@digest.
func (c *imageCache) get(repository, digest string) (Image, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.byKey[repository+"@"+digest]
	return img.clone(), ok
}

// put keeps a copy of img under its repository and digest.
func (c *imageCache) put(img Image) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := img.Repository + "@" + img.Digest
	if _, ok := c.byKey[key]; !ok && len(c.byKey) >= c.max {
		for k := range c.byKey {
			delete(c.byKey, k)
			break
		}
	}
	c.byKey[key] = img.clone()
}

// clone copies img's maps, slices and platform, so a caller's edits do
// not reach the cache.
func (img Image) clone() Image {
	img.Children = slices.Clone(img.Children)
	img.Labels = maps.Clone(img.Labels)
	img.Annotations = maps.Clone(img.Annotations)
	if img.Platform != nil {
		p := *img.Platform
		img.Platform = &p
	}
	return img
}
