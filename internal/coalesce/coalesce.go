// Package coalesce shares the runs of a function among concurrent
// callers without handing any of them a stale answer: each caller is
// answered by a run that began after it called (Do), or after a time it
// names (DoSince). A burst of calls for one key thus costs a run or two
// (the one under way when the burst began, which answers no one who
// came after it began, and the next), however many calls it holds.
package coalesce

import (
	"context"
	"sync"
	"time"
)

// Fresh runs functions by key, one run at a time per key.
type Fresh[T any] struct {
	// Keep is how long a run that succeeded may still answer the calls
	// of DoSince after it finished; 0 keeps none.
	Keep time.Duration

	mu      sync.Mutex
	pending map[string]*run[T]
	last    map[string]*run[T] // the last run that succeeded, for Keep
}

type run[T any] struct {
	began time.Time
	done  chan struct{}
	v     T
	err   error
}

// Do returns the result of fn run for key: by this call, or by another
// call's run that began after this one was made. A run outlives the
// caller that started it (fn gets a context without its cancellation,
// so the other waiters still get an answer); a caller whose ctx ends
// stops waiting.
func (f *Fresh[T]) Do(ctx context.Context, key string, fn func(context.Context) (T, error)) (T, error) {
	return f.DoSince(ctx, key, time.Now(), fn)
}

// DoSince is Do for a caller content with any run that began at since
// or later: one under way, or one that succeeded no longer than Keep ago.
func (f *Fresh[T]) DoSince(ctx context.Context, key string, since time.Time, fn func(context.Context) (T, error)) (T, error) {
	for {
		f.mu.Lock()
		if f.pending == nil {
			f.pending, f.last = map[string]*run[T]{}, map[string]*run[T]{}
		}
		if r := f.last[key]; r != nil && !r.began.Before(since) {
			f.mu.Unlock()
			return r.v, r.err
		}
		r := f.pending[key]
		if r == nil {
			r = &run[T]{began: time.Now(), done: make(chan struct{})}
			f.pending[key] = r
			f.mu.Unlock()
			r.v, r.err = fn(context.WithoutCancel(ctx))
			f.finish(key, r)
			return r.v, r.err
		}
		f.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if !r.began.Before(since) {
			return r.v, r.err
		}
	}
}

// finish ends r: a later call needs a later run, or, for Keep, r.
func (f *Fresh[T]) finish(key string, r *run[T]) {
	f.mu.Lock()
	delete(f.pending, key)
	if r.err == nil && f.Keep > 0 {
		f.last[key] = r
		time.AfterFunc(f.Keep, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.last[key] == r {
				delete(f.last, key)
			}
		})
	}
	f.mu.Unlock()
	close(r.done)
}
