package cluster

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// DefaultDownAfter is how long a cluster whose watches failed may go
// unanswered before its apps are woken to say Unknown (WithDownAfter).
const DefaultDownAfter = 10 * time.Second

// reachEvery is how often a cluster that does not answer is asked again,
// once it was declared down: its apps recover by themselves.
const reachEvery = 5 * time.Second

// follow makes l tell changed when its server stops answering for
// downAfter after a watch failed (down), and when it answers again (up).
// Without it, a cluster that died was noticed only by the next pass of
// each of its apps: an idle app kept saying what it last proved.
func (l *liveness) follow(downAfter time.Duration, changed func(down bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.downAfter, l.changed = downAfter, changed
}

// suspect runs while a watch failure is unexplained: it asks the server
// (through check, so passes share the answers) until it answers, telling
// changed(true) once it has not for downAfter, and changed(false) when
// it answers after that.
func (l *liveness) suspect() {
	defer func() {
		l.mu.Lock()
		l.suspecting = false
		l.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	since, down := l.now(), false
	for {
		err := l.check(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if down {
				l.changed(false)
			}
			return
		}
		wait := min(livenessRetry, l.downAfter/5)
		if !down && l.now().Sub(since) >= l.downAfter {
			down = true
			l.changed(true)
		}
		if down {
			wait = min(reachEvery, l.downAfter/2)
		}
		select {
		case <-l.done:
			return
		case <-time.After(wait):
		}
	}
}

// stop ends suspect, for a cluster that is closed.
func (l *liveness) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
	default:
		close(l.done)
	}
}

// tripwire tells a cluster's liveness of every request that could not
// reach its API server. client-go's reflectors retry a refused watch
// without reporting it (they expect the server back), so a dead server
// is noticed here, in the clients' transport, rather than by the
// informers' watch error handlers.
type tripwire struct{ alive atomic.Pointer[liveness] }

// wrap is a rest.Config's transport wrapper.
func (t *tripwire) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil && req.Context().Err() == nil && isConnError(err) {
			if l := t.alive.Load(); l != nil {
				l.broke()
			}
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
