// Package coalesce shares the runs of a function among concurrent
// callers without handing any of them a stale answer: each caller is
// answered by a run that began after it called. A burst of calls for
// one key thus costs a run or two (the one under way when the burst
// began, which answers no one who came after it began, and the next),
// however many calls it holds.
package coalesce

import (
	"context"
	"sync"
	"time"
)

// Fresh runs functions by key, one run at a time per key.
type Fresh[T any] struct {
	mu      sync.Mutex
	pending map[string]*run[T]
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
	asked := time.Now()
	for {
		f.mu.Lock()
		if f.pending == nil {
			f.pending = map[string]*run[T]{}
		}
		r := f.pending[key]
		if r == nil {
			r = &run[T]{began: time.Now(), done: make(chan struct{})}
			f.pending[key] = r
			f.mu.Unlock()
			r.v, r.err = fn(context.WithoutCancel(ctx))
			f.mu.Lock()
			delete(f.pending, key) // a later call needs a later run
			f.mu.Unlock()
			close(r.done)
			return r.v, r.err
		}
		f.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if !r.began.Before(asked) {
			return r.v, r.err
		}
	}
}
