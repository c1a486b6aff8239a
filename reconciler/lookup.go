package reconciler

import (
	"context"
	"errors"
	"sync"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/verdict"
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
	m   map[verdict.Lookup]verdict.Answer
}

func newLookupCache(reg Registry) *lookupCache {
	return &lookupCache{reg: reg, m: map[verdict.Lookup]verdict.Answer{}}
}

// answer resolves every lookup in needs and returns them all.
func (c *lookupCache) answer(ctx context.Context, needs []verdict.Lookup) verdict.Lookups {
	out := verdict.Lookups{}
	for _, l := range needs {
		c.mu.Lock()
		a, ok := c.m[l]
		c.mu.Unlock()
		if !ok {
			a = c.ask(ctx, l)
			if a.Err == "" {
				c.mu.Lock()
				if len(c.m) > 10000 {
					c.m = map[verdict.Lookup]verdict.Answer{} // bound memory; answers are cheap to refetch
				}
				c.m[l] = a
				c.mu.Unlock()
			}
		}
		out[l] = a
	}
	return out
}

func (c *lookupCache) ask(ctx context.Context, l verdict.Lookup) verdict.Answer {
	if c.reg == nil {
		return verdict.Answer{Err: "no registry client"}
	}
	switch l.Kind {
	case verdict.LookupConfig:
		d, err := c.reg.ConfigDigest(ctx, l.Ref, l.Platform)
		if errors.Is(err, registry.ErrNoPlatform) {
			return verdict.Answer{}
		}
		if err != nil {
			return verdict.Answer{Err: err.Error()}
		}
		return verdict.Answer{Digest: d}
	default:
		ch, err := c.reg.ChildFor(ctx, l.Ref, l.Platform)
		if errors.Is(err, registry.ErrNotIndex) || errors.Is(err, registry.ErrNoPlatform) {
			return verdict.Answer{}
		}
		if err != nil {
			return verdict.Answer{Err: err.Error()}
		}
		return verdict.Answer{Digest: ch.Digest}
	}
}
