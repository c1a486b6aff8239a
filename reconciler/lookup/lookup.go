// Package lookup answers the questions verification asks the registry
// (an image's config digests, an index's children), remembering the
// definite answers.
package lookup

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/singleflight"

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

// maxAnswers bounds the answers a Cache keeps; past it, it starts over.
const maxAnswers = 10000

// Cache answers Lookups through a Registry, remembering definite
// answers. A lookup names its image by digest, so what the registry
// served for it never changes: an answer, a 404 (Missing) and a refusal
// over pinbot's bounds (registry.ErrTooLarge) are definite. Other
// failures are not cached, so they are retried next pass.
//
// Passes asking the same lookup at once share one registry read: a
// hostile registry's oversized index pinned by a hundred apps is read
// once, not a hundred times in parallel.
type Cache struct {
	reg      Registry
	inflight singleflight.Group
	mu       sync.Mutex
	m        map[verdict.Lookup]verdict.Answer
}

// New returns an empty Cache over reg.
func New(reg Registry) *Cache {
	return &Cache{reg: reg, m: map[verdict.Lookup]verdict.Answer{}}
}

// Answers resolves every lookup in needs and returns them all.
func (c *Cache) Answers(ctx context.Context, needs []verdict.Lookup) verdict.Lookups {
	out := verdict.Lookups{}
	for _, l := range needs {
		out[l] = c.answer(ctx, l)
	}
	return out
}

func (c *Cache) answer(ctx context.Context, l verdict.Lookup) verdict.Answer {
	if a, ok := c.cached(l); ok {
		return a
	}
	v, _, _ := c.inflight.Do(string(l.Kind)+" "+l.Ref+" "+l.Platform.String(), func() (any, error) {
		if a, ok := c.cached(l); ok {
			return a, nil // a read that ended after this call looked
		}
		a, definite := answer(ctx, c.reg, l)
		if definite {
			c.mu.Lock()
			if len(c.m) >= maxAnswers {
				c.m = map[verdict.Lookup]verdict.Answer{} // bound memory; answers are cheap to refetch
			}
			c.m[l] = a
			c.mu.Unlock()
		}
		return a, nil
	})
	return v.(verdict.Answer)
}

// cached is the definite answer to l the Cache holds, if any.
func (c *Cache) cached(l verdict.Lookup) (verdict.Answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[l]
	return a, ok
}

// Answer asks reg one question verification depends on. A registry that
// answers 404 gives a definite answer (Missing); any other failure is Err.
func Answer(ctx context.Context, reg Registry, l verdict.Lookup) verdict.Answer {
	a, _ := answer(ctx, reg, l)
	return a
}

// answer is Answer, and whether the answer is definite (see Cache).
func answer(ctx context.Context, reg Registry, l verdict.Lookup) (verdict.Answer, bool) {
	if reg == nil {
		return verdict.Answer{Err: "no registry client"}, false
	}
	configs := l.Kind == verdict.LookupConfigs
	got, err := reg.Candidates(ctx, l.Ref, l.Platform, configs)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return verdict.Answer{Missing: true}, true
	case err != nil:
		return verdict.Answer{Err: err.Error()}, errors.Is(err, registry.ErrTooLarge)
	}
	a := verdict.Answer{Index: got.Index}
	if configs {
		a.Digests = got.Configs
		return a, true
	}
	for _, ch := range got.Children {
		a.Digests = append(a.Digests, ch.Digest)
	}
	return a, true
}
