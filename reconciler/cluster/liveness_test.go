package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeServer answers liveness probes with err and counts them.
type fakeServer struct {
	mu    sync.Mutex
	asked int
	err   error
}

func (f *fakeServer) probe(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return f.err
}

func (f *fakeServer) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked
}

func TestLivenessAsksAfterAWatchFails(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	srv := &fakeServer{}
	l := newLiveness(srv.probe, clock)
	ctx := context.Background()

	for range 3 {
		if err := l.check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.count(); n != 0 {
		t.Fatalf("asked %d times while the watches held; want 0", n)
	}

	// A watch fails and the server is gone: every check says so.
	srv.set(errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"))
	l.broke()
	err := l.check(ctx)
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("check after a failed watch: %v; want the server not answering", err)
	}
	// Within livenessRetry the failed answer is reused.
	if err := l.check(ctx); err == nil || srv.count() != 1 {
		t.Fatalf("second check: %v after %d questions; want the same error, asked once", err, srv.count())
	}
	now = now.Add(livenessRetry)
	if err := l.check(ctx); err == nil || srv.count() != 2 {
		t.Fatalf("check after livenessRetry: %v after %d questions; want asked again", err, srv.count())
	}

	// The server is back: one answer clears it, and the caches are trusted
	// again without asking.
	srv.set(nil)
	now = now.Add(livenessRetry)
	if err := l.check(ctx); err != nil {
		t.Fatalf("check with the server back: %v", err)
	}
	if err := l.check(ctx); err != nil || srv.count() != 3 {
		t.Fatalf("check after the answer: %v after %d questions; want nil, asked 3 times", err, srv.count())
	}
}

func TestLivenessAsksEveryInterval(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	srv := &fakeServer{}
	l := newLiveness(srv.probe, func() time.Time { return now })
	ctx := context.Background()

	now = now.Add(livenessEvery - time.Second)
	if err := l.check(ctx); err != nil || srv.count() != 0 {
		t.Fatalf("within livenessEvery: %v after %d questions; want nil, none", err, srv.count())
	}
	// A server that holds its watches open and answers nothing.
	srv.set(context.DeadlineExceeded)
	now = now.Add(time.Second)
	if err := l.check(ctx); err == nil || srv.count() != 1 {
		t.Fatalf("after livenessEvery: %v after %d questions; want an error, asked once", err, srv.count())
	}
	// Forbidden is an answer.
	srv.set(apierrors.NewForbidden(schema.GroupResource{}, "/version", errors.New("no")))
	now = now.Add(livenessRetry)
	if err := l.check(ctx); err != nil {
		t.Fatalf("forbidden: %v; want an answer", err)
	}
}

// A watch that fails while the server is asked makes the next check ask
// again: the answer predates the failure.
func TestLivenessWatchFailingDuringTheQuestion(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var l *liveness
	asked := 0
	l = newLiveness(func(ctx context.Context) error {
		asked++
		if asked == 1 {
			l.broke()
		}
		return nil
	}, func() time.Time { return now })
	ctx := context.Background()
	l.broke()
	for range 3 {
		if err := l.check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if asked != 2 {
		t.Fatalf("asked %d times; want 2 (the failure during the first question asks again)", asked)
	}
}

// A caller that gives up is not a server that does not answer.
func TestLivenessCallerGivesUp(t *testing.T) {
	srv := &fakeServer{err: context.Canceled}
	l := newLiveness(srv.probe, time.Now)
	l.broke()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.check(ctx); err == nil || strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("check with the caller gone: %v; want the caller's cancellation", err)
	}
	srv.set(nil)
	if err := l.check(context.Background()); err != nil {
		t.Fatalf("next check: %v; want asked afresh, not the caller's error", err)
	}
}

// While a server known not to answer is asked again, and hangs, every
// other check returns its last error at once.
func TestLivenessDoesNotQueueBehindAHangingQuestion(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	asked, release := make(chan struct{}, 1), make(chan struct{})
	hang := false
	l := newLiveness(func(ctx context.Context) error {
		mu.Lock()
		h := hang
		mu.Unlock()
		if h {
			asked <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return errors.New("connection refused")
	}, clock)
	ctx := context.Background()
	l.broke()
	if err := l.check(ctx); err == nil {
		t.Fatal("want the first failure")
	}
	mu.Lock()
	now, hang = now.Add(livenessRetry), true
	mu.Unlock()
	go func() { _ = l.check(ctx) }()
	<-asked // the second question hangs
	done := make(chan error, 1)
	go func() { done <- l.check(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("check during the question: %v; want the last error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a check queued behind the hanging question")
	}
	close(release)
}

// TestLivenessFollowsReachability: a server that stops answering after a
// watch broke is reported down once it has not answered for downAfter,
// and up, once, when it answers again; one that answers at once is
// never reported.
func TestLivenessFollowsReachability(t *testing.T) {
	srv := &fakeServer{}
	l := newLiveness(srv.probe, time.Now)
	t.Cleanup(l.stop)
	changes := make(chan bool, 10)
	l.follow(200*time.Millisecond, func(down bool) { changes <- down })

	l.broke() // a blip: the server answers
	select {
	case c := <-changes:
		t.Fatalf("a server that answers was reported down=%v", c)
	case <-time.After(time.Second):
	}

	srv.set(errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"))
	start := time.Now()
	l.broke()
	l.broke() // a second failure does not start a second follower
	select {
	case down := <-changes:
		if !down {
			t.Fatal("reported up while the server does not answer")
		}
		if took := time.Since(start); took < 200*time.Millisecond {
			t.Errorf("reported down after %s, before downAfter", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a server that does not answer was never reported down")
	}
	srv.set(nil)
	select {
	case down := <-changes:
		if down {
			t.Fatal("reported down twice")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a server that answers again was never reported up")
	}
	select {
	case c := <-changes:
		t.Errorf("an extra report down=%v", c)
	case <-time.After(500 * time.Millisecond):
	}
}
