package reconciler

import (
	"context"
	"errors"
	"sync"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/registry"
)

// Registry is the part of *registry.Client verification uses.
type Registry interface {
	ChildFor(ctx context.Context, indexRef string, p imageref.Platform) (registry.Child, error)
	ConfigDigest(ctx context.Context, ref string, p imageref.Platform) (string, error)
}

// lookupCache answers Lookups through a Registry, remembering definite
// answers. Failed lookups are not cached, so they are retried next pass.
type lookupCache struct {
	reg Registry
	mu  sync.Mutex
	m   map[Lookup]Answer
}

func newLookupCache(reg Registry) *lookupCache {
	return &lookupCache{reg: reg, m: map[Lookup]Answer{}}
}

// answer resolves every lookup in needs and returns them all.
func (c *lookupCache) answer(ctx context.Context, needs []Lookup) Lookups {
	out := Lookups{}
	for _, l := range needs {
		c.mu.Lock()
		a, ok := c.m[l]
		c.mu.Unlock()
		if !ok {
			a = c.ask(ctx, l)
			if a.Err == "" {
				c.mu.Lock()
				if len(c.m) > 10000 {
					c.m = map[Lookup]Answer{} // bound memory; answers are cheap to refetch
				}
				c.m[l] = a
				c.mu.Unlock()
			}
		}
		out[l] = a
	}
	return out
}

func (c *lookupCache) ask(ctx context.Context, l Lookup) Answer {
	if c.reg == nil {
		return Answer{Err: "no registry client"}
	}
	switch l.Kind {
	case LookupConfig:
		d, err := c.reg.ConfigDigest(ctx, l.Ref, l.Platform)
		if errors.Is(err, registry.ErrNoPlatform) {
			return Answer{}
		}
		if err != nil {
			return Answer{Err: err.Error()}
		}
		return Answer{Digest: d}
	default:
		ch, err := c.reg.ChildFor(ctx, l.Ref, l.Platform)
		if errors.Is(err, registry.ErrNotIndex) || errors.Is(err, registry.ErrNoPlatform) {
			return Answer{}
		}
		if err != nil {
			return Answer{Err: err.Error()}
		}
		return Answer{Digest: ch.Digest}
	}
}
