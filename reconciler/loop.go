package reconciler

import (
	"context"
	"errors"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Backoff bounds for transient faults (source or cluster unreachable).
const (
	minBackoff = time.Second
	// followDebounce gathers a burst of Pod events into one follow-up pass.
	followDebounce = 100 * time.Millisecond
	// healDebounce gathers a burst of changes to an app's objects into one
	// self-heal pass, and lets another writer's follow-up edits land.
	healDebounce = time.Second
	// loopPasses bounds the loop's passes under way at once. A thousand
	// apps start together: unbounded, their first passes would hold a
	// thousand renders and snapshots in memory at the same moment, and
	// the heap the runtime grows for that peak stays the process's.
	// Passes wait on the API server, Git and the registry more than on the
	// CPU, so a few dozen keep those busy.
	loopPasses = 32
)

// RunUntil reconciles every app until stop closes: a full pass at start, then one
// every interval, and one at once on Trigger. Between full passes, events
// of the Pods and ReplicaSets of the app's workloads cause follow-up
// passes, which verify again from the caches: the verdict of a rollout
// lands as soon as it completes, and a Pod replaced under a proof is
// judged at once, not an interval later. For a self-healing app,
// a change to the content of one of its objects (watched, not polled)
// causes a full pass a second later, so drift is healed within seconds.
//
// It first checks what must hold for any app to work (the history
// namespace exists) and returns that error at once: bad configuration
// stops and says so. An API server that does not answer yet is waited
// for, with backoff. Afterwards errors are per app: transient faults
// (source or cluster unreachable) are retried with exponential backoff up
// to the interval, and problems in Git (render errors, forbidden objects,
// failed applies) are recorded and retried only at the interval.
//
// It stops starting passes once stop is closed, while ctx bounds the pass
// in flight: a graceful shutdown closes stop at SIGTERM and ends ctx after
// its timeout, so a sync under way is finished and recorded rather than
// cut off.
func (r *Reconciler) RunUntil(ctx context.Context, stop <-chan struct{}) error {
	return r.RunSome(ctx, stop, nil)
}

// RunSome is RunUntil of the apps keep keeps (all of them when keep is
// nil): a replica of serve that holds some shards passes their apps only.
// When it returns, this process forgets the kept apps' last passes: from
// then on another replica passes them, and the metrics and the dashboard
// show the status that replica stores.
func (r *Reconciler) RunSome(ctx context.Context, stop <-chan struct{}, keep func(app *config.App) bool) error {
	r.log.Store(logctx.From(ctx))
	for backoff := minBackoff; ; backoff = min(2*backoff, time.Duration(r.Config().Interval)) {
		err := r.Check(ctx)
		if err == nil {
			break
		}
		if !cluster.Transient(err) || ctx.Err() != nil {
			return err
		}
		logctx.From(ctx).Warn("kubernetes API unreachable; retrying", "in", backoff, "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-time.After(backoff):
		}
	}
	r.history.Follow()
	r.prime(ctx, keep)
	a := &appRuns{r: r, ctx: ctx, keep: keep, running: map[string]*appRun{}}
	r.runs.add(a)
	reread := r.local.Objects.Reread() // the deployers' objects of the apps taken
	a.startAll()
	go reread(ctx)
	select { // apps come and go (SetApps) until the end
	case <-ctx.Done():
	case <-stop:
	}
	r.runs.remove(a)
	a.endAll()
	a.wg.Wait()
	return nil
}

// prime readies what the kept apps' first passes read: their records
// (one LIST) and, with shards, the Pod caches of their namespaces
// (config.App.ShardKey), here and on the other clusters they name, listed
// side by side. A failure costs only the time: each pass reads its record
// and watches its namespaces.
func (r *Reconciler) prime(ctx context.Context, keep func(app *config.App) bool) {
	var apps []string
	spaces := map[string]*config.App{} // CLUSTER/NAMESPACE → one app that reads it
	all := r.Config().Apps
	for i := range all {
		if keep == nil || keep(&all[i]) {
			apps = append(apps, all[i].Name)
			if key := all[i].ShardKey(); strings.Contains(key, "/") && keep != nil {
				spaces[key] = &all[i]
			}
		}
	}
	for key, a := range spaces {
		go func() {
			at := strings.LastIndex(key, "/") // a cluster may be named by its URL
			if c, err := r.clusterOf(ctx, a, destinationOf(a, key[:at], r.Config().StateNamespace)); err == nil {
				_ = c.Pods.Watch(ctx, a.Name, []string{key[at+1:]})
			}
		}()
	}
	if len(apps) < primeFrom {
		return
	}
	if err := r.history.Prime(ctx, apps); err != nil {
		logctx.From(ctx).Warn("reading the apps' records at once failed; each pass reads its own", "error", err.Error())
	}
}

// primeFrom is how many apps make one LIST of the records cheaper than a
// GET each.
const primeFrom = 50

func (r *Reconciler) runApp(ctx context.Context, stop <-chan struct{}, app *config.App, st *appState) {
	log := logctx.From(ctx).With("app", app.Name)
	interval := time.Duration(r.Config().Interval)
	backoff := minBackoff
	for {
		if stopped(stop) {
			return
		}
		s, _, err := r.loopPass(ctx, stop, app, st, modeLoop)
		if ctx.Err() != nil || stopped(stop) {
			return
		}
		wait := interval
		switch {
		case err == nil:
			backoff = minBackoff
			log.Debug("pass", "commit", shortSHA(s.Commit), "sync", s.Sync, "health", s.Health, "verified", s.Verified)
		case retryable(err):
			wait = min(backoff, interval)
			backoff *= 2
			log.Warn("pass failed; retrying", "in", wait, "error", err)
		default:
			backoff = minBackoff
			log.Error("pass stopped", "error", err)
		}
		if !r.idle(ctx, stop, app, st, wait) {
			return
		}
	}
}

// idle waits wait (or a trigger) before the next full pass, running
// follow-up passes on the events of the app's Pods. It returns false when
// ctx ends.
func (r *Reconciler) idle(ctx context.Context, stop <-chan struct{}, app *config.App, st *appState, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var drifted chan struct{} // nil (never ready) unless the app heals
	if app.SyncPolicy.SelfHeal {
		drifted = st.wake
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		case <-timer.C:
			return true
		case <-st.trigger:
			return true
		case <-drifted:
			select {
			case <-ctx.Done():
				return false
			case <-time.After(healDebounce):
			}
			select { // changes during the debounce are covered by this pass
			case <-drifted:
			default:
			}
			return true
		case <-st.observe:
			select {
			case <-ctx.Done():
				return false
			case <-time.After(followDebounce):
			}
			select { // events during the debounce are covered by this pass
			case <-st.observe:
			default:
			}
			s, _, err := r.loopPass(ctx, stop, app, st, modeFollow)
			if stopped(stop) {
				return false
			}
			if err == nil {
				logctx.From(ctx).Debug("follow-up pass", "app", app.Name, "commit", shortSHA(s.Commit), "verified", s.Verified, "verification", s.Verification)
			}
			if err != nil && ctx.Err() == nil {
				// What the event was about is not reported yet: a full
				// pass now, not at the interval, with the loop's backoff
				// if it fails too.
				logctx.From(ctx).Warn("follow-up pass failed; running a full pass", "app", app.Name, "error", err)
				return true
			}
		}
	}
}

// loopPass is a pass of the loop in mode m, once one of loopPasses is
// free; when stop closes first, there is none (errStopped), so a replica
// giving a shard up waits only for the passes under way, not for every
// app queued behind them. A command's pass (Status, Sync) does not wait
// for a slot. The pass
// runs on a goroutine of its own, which ends with it: the deep stack a
// pass grows (rendering, decoding) goes with it, and the app's loop,
// which mostly waits, keeps a small one. A thousand apps' loops would
// otherwise hold their passes' stacks between passes.
func (r *Reconciler) loopPass(ctx context.Context, stop <-chan struct{}, app *config.App, st *appState, m mode) (*status.App, *verdict.Verification, error) {
	select {
	case r.loopSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	case <-stop:
		return nil, nil, errStopped
	}
	type result struct {
		s   *status.App
		v   *verdict.Verification
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-r.loopSlots }()
		s, v, err := r.pass(ctx, app, st, m, nil)
		done <- result{s, v, err}
	}()
	res := <-done
	return res.s, res.v, res.err
}

// errStopped is a loop pass that did not run: its loop was stopped
// while it waited for a slot.
var errStopped = errors.New("the app's loop stopped before its pass")

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// retryable reports whether a pass error is a transient fault to retry
// with backoff: the source unreachable or a Kubernetes API hiccup.
func retryable(err error) bool {
	var se *gitsource.Error
	return errors.As(err, &se) || cluster.Transient(err)
}
