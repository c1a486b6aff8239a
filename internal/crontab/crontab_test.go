package crontab

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunNeverOverlaps holds the first run until the scheduler has
// skipped a tick because of it, then checks no two runs ever overlapped and
// that Run returns once ctx ends and the run in progress finished.
func TestRunNeverOverlaps(t *testing.T) {
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(logctx.Into(context.Background(),
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer cancel()

	var running, maxRunning, runs atomic.Int32
	finished := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, "@every 1s", func(context.Context) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
			}
			switch runs.Add(1) {
			case 1:
				poll.True(t, 10*time.Second, "the schedule to run", func() bool { return strings.Contains(logs.String(), "cron: skip") })
			case 2:
				cancel()
				<-finished // Schedule must wait for this run
			}
		})
	}()
	poll.True(t, 15*time.Second, "the schedule to run", func() bool { return runs.Load() >= 2 })
	select {
	case err := <-done:
		t.Fatalf("Schedule returned (%v) while a run was in progress", err)
	default:
	}
	close(finished)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if maxRunning.Load() != 1 {
		t.Errorf("%d runs overlapped", maxRunning.Load())
	}
}

func TestRunBadSpec(t *testing.T) {
	if err := Run(context.Background(), "now and then", func(context.Context) {}); err == nil || !strings.Contains(err.Error(), `schedule "now and then"`) {
		t.Errorf("error = %v", err)
	}
}
