package reconciler

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// wavePoll is how often a sync looks at a wave it waits for.
const wavePoll = 500 * time.Millisecond

// WaveError stops a sync: an object of a wave failed, or the wave was not
// ready within the app's waveTimeout. Later waves are not applied.
type WaveError struct {
	// Phase is the wave's phase: PhasePreSync or PhasePostSync for hooks.
	Phase  Phase
	Wave   int
	Object ObjectRef
	// Status is the object's kstatus status: Failed, or what it was when
	// the wave timed out.
	Status  string
	Message string
	// Timeout is the app's waveTimeout when the wave timed out, else 0.
	Timeout time.Duration
}

// Error names the wave, the object and the cause.
func (e *WaveError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("%s: %s not ready after %s: %s: %s", waveName(e.Phase, e.Wave), e.Object, e.Timeout, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s failed: %s", waveName(e.Phase, e.Wave), e.Object, e.Message)
}

// waveState is where one wave stands.
type waveState int

const (
	waveWaiting waveState = iota
	waveReady
	waveFailed
)

// waveProgress decides, purely, whether a wave whose objects' health is
// rep (AssessHealth over the wave's objects) may end: every object is
// Current, and every Job has completed (its Complete condition is True;
// kstatus calls a Job Current once it has started). A Failed object fails
// the wave. It returns the object that failed the wave or, while waiting,
// the first object it waits for.
func waveProgress(rep HealthReport, live map[ObjectRef]*unstructured.Unstructured) (waveState, ObjectHealth) {
	var waiting *ObjectHealth
	for _, oh := range rep.Objects {
		switch status.Status(oh.Status) {
		case status.FailedStatus:
			return waveFailed, oh
		case status.CurrentStatus:
			if l := live[oh.Object]; l != nil && isJob(l) && !jobCompleted(l) {
				oh.Status, oh.Message = string(status.InProgressStatus), "Job has not completed: "+oh.Message
			} else {
				continue
			}
		}
		if waiting == nil {
			w := oh
			waiting = &w
		}
	}
	if waiting != nil {
		return waveWaiting, *waiting
	}
	return waveReady, ObjectHealth{}
}

func isJob(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "batch" && gvk.Kind == "Job"
}

// jobCompleted reports whether the Job's Complete condition is True.
func jobCompleted(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Complete" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// applyWaves applies waves in order and, after each wave but the last,
// waits until the wave is ready (waveProgress) or app's waveTimeout
// passes. The last wave is not awaited, unless it holds PostSync hooks:
// the rollout and its verification follow the sync as before. Hooks run once per rendered content (see
// hookAction; rerunFailed runs a failed one again): one the cluster
// already holds is not applied, but still awaited. The first failure
// stops the sync: an *ApplyError, a *WaveError, or ctx's error. It returns
// the objects as applied.
func (r *Reconciler) applyWaves(ctx context.Context, app *App, waves []Wave, rerunFailed bool) ([]*unstructured.Unstructured, error) {
	var applied []*unstructured.Unstructured
	for i, w := range waves {
		objs, err := r.prepareWave(ctx, app, w, rerunFailed)
		if err != nil {
			return applied, err
		}
		done, err := r.applier.Apply(ctx, app.Name, objs)
		applied = append(applied, done...)
		if err != nil {
			return applied, err
		}
		if i == len(waves)-1 && w.Phase != PhasePostSync {
			break // a wave of PostSync hooks is awaited: its failure fails the sync
		}
		if err := r.awaitWave(ctx, app, w); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// awaitWave polls the wave's objects (and, for workloads, their Pods from
// the Watcher's caches) until waveProgress says ready or failed, or the
// app's waveTimeout passes. Read errors are retried until the timeout.
func (r *Reconciler) awaitWave(ctx context.Context, app *App, w Wave) error {
	if len(w.Objects) == 0 {
		return nil
	}
	timeout := time.Duration(app.WaveTimeout)
	if timeout <= 0 {
		timeout = DefaultWaveTimeout
	}
	if err := r.watcher.Watch(ctx, app.AllowNamespaces); err != nil {
		return fmt.Errorf("watching for %s: %w", w, err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ObjectHealth{Object: RefOf(w.Objects[0]), Status: string(status.UnknownStatus), Message: "not read yet"}
	tick := time.NewTicker(wavePoll)
	defer tick.Stop()
	for {
		// A direct read, not the watch caches: they may not have seen the
		// apply yet, and an object cached from before it (its old
		// generation observed, so Current) would end the wave too early.
		live, err := r.applier.Live(wctx, app.Name, w.Objects)
		if err == nil {
			snap := &Snapshot{Desired: w.Objects, Live: live}
			r.watcher.Fill(snap, app.AllowNamespaces)
			state, oh := waveProgress(AssessHealth(snap), live)
			switch state {
			case waveReady:
				return nil
			case waveFailed:
				return &WaveError{Phase: w.Phase, Wave: w.Number, Object: oh.Object, Status: oh.Status, Message: oh.Message}
			}
			last = oh
		} else if wctx.Err() == nil {
			last.Message = "reading it: " + err.Error()
		}
		select {
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("waiting for %s: %w", w, err)
			}
			// Not wrapped: a timed-out wave is a verdict on the manifests,
			// not a transient fault to retry at once.
			return &WaveError{Phase: w.Phase, Wave: w.Number, Object: last.Object, Status: last.Status, Message: last.Message, Timeout: timeout}
		case <-tick.C:
		}
	}
}
