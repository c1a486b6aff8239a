// Package lookup answers the questions verification asks the registry
// (an image's config digests, an index's children), remembering the
// definite answers.
package lookup

import (
	"context"
	"errors"
	"sync"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
)

// Registry is the part of *registry.Client verification uses.
type Registry interface {
	Candidates(ctx context.Context, ref string, p imageref.Platform, configs bool) (registry.Candidates, error)
	// The signatures of apps that verifySignatures.
	trust.Registry
}

// Cache answers Lookups through a Registry, remembering definite
// answers. Failed lookups are not cached, so they are retried next pass.
type Cache struct {
	reg Registry
	mu  sync.Mutex
	m   map[verdict.Lookup]verdict.Answer
}

// New returns an empty Cache over reg.
func New(reg Registry) *Cache {
	return &Cache{reg: reg, m: map[verdict.Lookup]verdict.Answer{}}
}

// Answers resolves every lookup in needs and returns them all.
func (c *Cache) Answers(ctx context.Context, needs []verdict.Lookup) verdict.Lookups {
	out := verdict.Lookups{}
	for _, l := range needs {
		c.mu.Lock()
		a, ok := c.m[l]
		c.mu.Unlock()
		if !ok {
			a = Answer(ctx, c.reg, l)
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

// Answer asks reg one question verification depends on. A registry that
// answers 404 gives a definite answer (Missing); any other failure is Err.
func Answer(ctx context.Context, reg Registry, l verdict.Lookup) verdict.Answer {
	if reg == nil {
		return verdict.Answer{Err: "no registry client"}
	}
	configs := l.Kind == verdict.LookupConfigs
	got, err := reg.Candidates(ctx, l.Ref, l.Platform, configs)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return verdict.Answer{Missing: true}
	case err != nil:
		return verdict.Answer{Err: err.Error()}
	}
	a := verdict.Answer{Index: got.Index}
	if configs {
		a.Digests = got.Configs
		return a
	}
	for _, ch := range got.Children {
		a.Digests = append(a.Digests, ch.Digest)
	}
	return a
}
