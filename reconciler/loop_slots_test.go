package reconciler

import (
	"context"
	"errors"
	"testing"
	"time"

	"pinbot.dev/pinbot/reconciler/config"
)

// TestLoopPassGivesWayWhenStopped: a loop whose shard is given up while
// its pass waits for a slot runs no pass, so the replica hands the shard
// over once the passes under way end, not after every app queued.
func TestLoopPassGivesWayWhenStopped(t *testing.T) {
	r := &Reconciler{loopSlots: make(chan struct{}, 1)}
	r.loopSlots <- struct{}{} // every slot busy
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := r.loopPass(context.Background(), stop, &config.App{Name: "web"}, newAppState(), modeLoop)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("loopPass returned %v with every slot busy, want it to wait", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(stop)
	select {
	case err := <-done:
		if !errors.Is(err, errStopped) {
			t.Errorf("loopPass = %v, want errStopped", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("loopPass still waits for a slot after its loop stopped")
	}
}
