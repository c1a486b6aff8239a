package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const (
	// livenessEvery is how long a cluster's watch caches are trusted
	// without asking its API server, when no watch has failed: a server
	// that holds its watches open and answers nothing is found within it.
	livenessEvery = 30 * time.Second
	// livenessTimeout bounds one question.
	livenessTimeout = 10 * time.Second
	// livenessRetry is how long a failed answer is reused, so that the
	// passes of a thousand apps on a dead cluster ask it once.
	livenessRetry = 2 * time.Second
)

// liveness says whether a cluster's API server still answers. A watch
// cache keeps its last objects when its watch breaks, so a pass that read
// only caches would prove what ran on a cluster that is gone. A failed
// watch makes the next pass ask the server (GET /version) before it reads
// the caches, and so does livenessEvery without a failure. An idle cluster
// costs one request per livenessEvery, whatever its number of apps.
type liveness struct {
	probe func(context.Context) error
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time // the server's last answer
	broken  uint64    // counts watch failures; a probe clears those it began after
	seen    uint64    // broken as of the last answer
	lastErr error
	errAt   time.Time
	probing bool // a question is under way

	// downAfter and changed follow the server's reachability (follow);
	// suspecting says suspect runs; done stops it.
	downAfter  time.Duration
	changed    func(down bool)
	suspecting bool
	done       chan struct{}

	probeMu sync.Mutex // one question at a time
}

// newLiveness returns a liveness that asks with probe, starting as
// answered now: the first LIST of each watch tells a dead server anyway.
func newLiveness(probe func(context.Context) error, now func() time.Time) *liveness {
	return &liveness{probe: probe, now: now, checked: now(), done: make(chan struct{})}
}

// watchFailed is the informers' watch error handler: it logs as
// client-go's default does and makes the next check ask the server.
func (l *liveness) watchFailed(ctx context.Context, r *cache.Reflector, err error) {
	cache.DefaultWatchErrorHandler(ctx, r, err)
	l.broke()
}

// broke makes the next check ask the server.
func (l *liveness) broke() {
	l.mu.Lock()
	l.broken++
	start := l.changed != nil && !l.suspecting
	l.suspecting = l.suspecting || start
	l.mu.Unlock()
	if start {
		go l.suspect()
	}
}

// watch makes inf report its watch failures to l; call before inf runs.
func (l *liveness) watch(inf cache.SharedInformer) error {
	if err := inf.SetWatchErrorHandlerWithContext(l.watchFailed); err != nil {
		return fmt.Errorf("handling watch errors: %w", err)
	}
	return nil
}

// fresh reports whether the caches may be read without asking.
func (l *liveness) fresh() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken == l.seen && l.now().Sub(l.checked) < livenessEvery
}

// check returns nil when the caches may be read: no watch failed and the
// server answered within livenessEvery, or it answers now. While a server
// known not to answer is asked again, check returns at once with its
// last error: a cluster that hangs holds up only one pass at a time, not
// every pass of its apps (and through the loop's bounded passes, the
// other clusters' apps).
func (l *liveness) check(ctx context.Context) error {
	if l.fresh() {
		return nil
	}
	if err := l.known(); err != nil {
		return err
	}
	l.probeMu.Lock()
	defer l.probeMu.Unlock()
	if l.fresh() { // another pass asked meanwhile
		return nil
	}
	if err := l.known(); err != nil {
		return err
	}
	l.mu.Lock()
	broken := l.broken
	l.probing = true
	l.mu.Unlock()

	pctx, cancel := context.WithTimeout(ctx, livenessTimeout)
	err := l.probe(pctx)
	cancel()
	if apierrors.IsForbidden(err) {
		err = nil // an answer all the same
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probing = false
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx) // the caller gave up, not the server
		}
		l.lastErr, l.errAt = fmt.Errorf("the API server does not answer: %w", err), l.now()
		return l.lastErr
	}
	l.checked, l.seen, l.lastErr = l.now(), broken, nil
	return nil
}

// known is the last error while it stands: within livenessRetry of it,
// or while the server is being asked again.
func (l *liveness) known() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastErr != nil && (l.probing || l.now().Sub(l.errAt) < livenessRetry) {
		return l.lastErr
	}
	return nil
}

// probeVersion asks kube's API server its version: the cheapest question
// every server answers, to anyone.
func probeVersion(kube kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		return kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	}
}
