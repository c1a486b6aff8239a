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

func TestDoSinceIsAnsweredByAKeptRunThatBeganAfterSince(t *testing.T) {
	f := Fresh[int]{Keep: 50 * time.Millisecond}
	var runs atomic.Int32
	count := func(context.Context) (int, error) { return int(runs.Add(1)), nil }
	since := time.Now()
	for i := range 5 {
		if v, err := f.DoSince(context.Background(), "k", since, count); err != nil || v != 1 {
			t.Fatalf("call %d after the first run: %d, %v; want the first run's 1", i, v, err)
		}
	}
	// A call that wants a run begun after the kept one gets a new run.
	if v, _ := f.DoSince(context.Background(), "k", time.Now(), count); v != 2 {
		t.Errorf("a call since now: run %d, want a new run 2", v)
	}
	if v, _ := f.Do(context.Background(), "k", count); v != 3 {
		t.Errorf("Do after a kept run: run %d, want a new run 3", v)
	}
	time.Sleep(200 * time.Millisecond) // past Keep
	if v, _ := f.DoSince(context.Background(), "k", since, count); v != 4 {
		t.Errorf("a call after Keep: run %d, want a new run 4", v)
	}
}

func TestDoSinceKeepsNoFailure(t *testing.T) {
	f := Fresh[int]{Keep: time.Minute}
	var runs atomic.Int32
	failing := func(context.Context) (int, error) { return int(runs.Add(1)), errors.New("the API server said no") }
	since := time.Now()
	_, _ = f.DoSince(context.Background(), "k", since, failing)
	_, _ = f.DoSince(context.Background(), "k", since, failing)
	if n := runs.Load(); n != 2 {
		t.Errorf("two calls after a failed run: %d runs, want 2", n)
	}
}
