package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fifty concurrent calls share two runs at most, and each gets an
// answer from a run that began after it called.
func TestBurstSharesRunsThatBeganAfterIt(t *testing.T) {
	var f Fresh[time.Time]
	var runs atomic.Int32
	slow := func(context.Context) (time.Time, error) {
		runs.Add(1)
		began := time.Now()
		time.Sleep(20 * time.Millisecond)
		return began, nil
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			asked := time.Now()
			began, err := f.Do(context.Background(), "k", slow)
			if err != nil || began.Before(asked) {
				t.Errorf("answered by a run that began %v before the call (err %v)", asked.Sub(began), err)
			}
		})
	}
	wg.Wait()
	if n := runs.Load(); n > 2 {
		t.Errorf("%d runs for a burst of 50 calls, want at most 2", n)
	}
	// Sequential calls each get a run of their own; keys do not share.
	before := runs.Load()
	_, _ = f.Do(context.Background(), "k", slow)
	_, _ = f.Do(context.Background(), "other", slow)
	if n := runs.Load() - before; n != 2 {
		t.Errorf("two calls one after the other: %d runs, want 2", n)
	}
}

// A caller that gives up stops waiting; the run goes on for the others.
func TestCallerThatGivesUpStopsWaiting(t *testing.T) {
	var f Fresh[int]
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_, _ = f.Do(context.Background(), "k", func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Do(ctx, "k", func(context.Context) (int, error) { return 2, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a caller whose context ended: %v, want its deadline", err)
	}
	close(release)
}
