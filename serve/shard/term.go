package shard

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// term is one attempt to hold a shard: from asking for its Lease until
// the Lease is released or lost and the shard's Work has returned.
type term struct {
	shard  int
	stop   chan struct{} // closed by giveUp: Work finishes its pass and returns
	once   sync.Once
	cancel context.CancelFunc // ends the elector, which then releases the Lease
	done   chan struct{}      // closed once the elector and Work have both ended

	mu      sync.Mutex
	ended   bool          // the elector returned: no Work may start
	working chan struct{} // non-nil once Work started; closed when it returned
}

// giveUp asks the term to end: Work finishes the pass in flight, and the
// Lease is released after. It reports whether this call asked.
func (t *term) giveUp() bool {
	asked := false
	t.once.Do(func() {
		asked = true
		close(t.stop)
		t.mu.Lock()
		idle := t.working == nil
		t.mu.Unlock()
		if idle { // still asking for the Lease: nothing to finish
			t.cancel()
		}
	})
	return asked
}

// start runs a term for shard k. The elector's context does not end with
// ctx: the Lease is released only after Work returned, never while a
// pass is in flight.
func (m *Manager) start(ctx context.Context, k int) *term {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &term{shard: k, stop: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: shardName(k), Namespace: m.o.Namespace},
		Client:     m.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: m.o.ID},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   m.o.Duration,
		RenewDeadline:   m.o.RenewDeadline,
		RetryPeriod:     m.o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            shardName(k),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { m.hold(ctx, lctx, t) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil { // the options were validated: only a bug gets here
		m.log.Error("setting up the shard's elector", "shard", k, "error", err.Error())
		cancel()
		close(t.done)
		return t
	}
	go func() {
		le.Run(ectx)
		cancel()
		t.mu.Lock()
		t.ended = true
		working := t.working
		t.mu.Unlock()
		if working != nil {
			<-working
		}
		close(t.done)
	}()
	return t
}

// hold runs Work while the shard is held: lctx ends when the Lease is
// lost, ctx when the Manager's passes are cut off. Once Work returns, the
// Lease is released.
func (m *Manager) hold(ctx, lctx context.Context, t *term) {
	t.mu.Lock()
	if t.ended || lctx.Err() != nil {
		t.mu.Unlock()
		return
	}
	working := make(chan struct{})
	t.working = working
	t.mu.Unlock()
	defer close(working)
	defer t.cancel() // release the Lease, once Work has returned
	wctx, cut := context.WithCancel(lctx)
	defer cut()
	defer context.AfterFunc(ctx, cut)()
	select {
	case <-t.stop: // given up while asking: do not start
		return
	default:
	}
	m.log.Info("holding a shard", "shard", t.shard, "lease", m.o.Namespace+"/"+shardName(t.shard))
	m.setHeld(t.shard, true)
	m.work(wctx, t.stop, t.shard)
	m.setHeld(t.shard, false)
	// The memory of the shard's apps goes back to the system soon, not
	// over the minutes the scavenger would take: a replica that handed
	// its shards to new ones holds what it passes. Not at once: the
	// watches of the namespaces dropped stop on their own goroutines,
	// and a collection that runs before they do finds their objects
	// live and lets the heap grow to twice that before the next.
	time.AfterFunc(returnAfter, debug.FreeOSMemory)
	if lctx.Err() != nil {
		m.log.Warn("lost a shard's Lease; its passes were stopped", "shard", t.shard)
		return
	}
	m.log.Info("giving a shard's Lease back", "shard", t.shard)
}
