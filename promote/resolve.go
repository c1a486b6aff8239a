package promote

import (
	"context"
	"sync"

	"pinbot.dev/pinbot/registry"
)

// resolver resolves each tag of a run once, and can start before the tag
// is asked for: drift starts the tags of the cached head while the fetch
// of the current head is under way, and most runs find the same tags.
type resolver struct {
	reg   Registry
	sem   chan struct{} // bounds the resolutions in flight
	mu    sync.Mutex
	calls map[string]*resolution
}

// resolution is one tag's answer, ready once done is closed.
type resolution struct {
	done chan struct{}
	d    registry.Descriptor
	err  error
}

func newResolver(reg Registry, concurrency int) *resolver {
	return &resolver{reg: reg, sem: make(chan struct{}, max(concurrency, 1)), calls: map[string]*resolution{}}
}

// start begins resolving ref unless it is resolved or under way.
func (r *resolver) start(ctx context.Context, ref string) *resolution {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls[ref]; c != nil {
		return c
	}
	c := &resolution{done: make(chan struct{})}
	r.calls[ref] = c
	go func() {
		defer close(c.done)
		select {
		case r.sem <- struct{}{}:
			defer func() { <-r.sem }()
		case <-ctx.Done():
			c.err = ctx.Err()
			return
		}
		c.d, c.err = r.reg.Resolve(ctx, ref)
	}()
	return c
}

// Resolve is Registry.Resolve, answered once per ref.
func (r *resolver) Resolve(ctx context.Context, ref string) (registry.Descriptor, error) {
	c := r.start(ctx, ref)
	select {
	case <-c.done:
		return c.d, c.err
	case <-ctx.Done():
		return registry.Descriptor{}, ctx.Err()
	}
}
