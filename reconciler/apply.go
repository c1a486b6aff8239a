package reconciler

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/reconciler/wave"
)

// wavePoll is how often a sync looks at a wave it waits for.
const wavePoll = 500 * time.Millisecond

// applyWaves applies waves in order and, after each wave but the last,
// waits until the wave is ready (wave.Progress) or the app's waveTimeout
// passes. The last wave is not awaited, unless it holds PostSync hooks:
// the rollout and its verification follow the sync as before. Hooks run
// once per rendered content (see hook.Action; `pinbot sync` runs a
// failed one again): one the cluster already holds is not applied, but
// still awaited. The first failure stops the sync: an *ssa.ApplyError, a
// *wave.Error, or ctx's error. It returns the objects as applied.
func (p *pass) applyWaves(ctx context.Context, waves []wave.Wave) ([]*unstructured.Unstructured, error) {
	var applied []*unstructured.Unstructured
	for i, w := range waves {
		objs, err := p.prepareWave(ctx, w)
		if err != nil {
			return applied, err
		}
		done, err := p.c.Applier.Apply(ctx, p.app.Name, objs)
		applied = append(applied, done...)
		p.noteKinds(done)
		if err != nil {
			return applied, err
		}
		if i == len(waves)-1 && w.Phase != hook.PostSync {
			break // a wave of PostSync hooks is awaited: its failure fails the sync
		}
		if err := p.awaitWave(ctx, w); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// awaitWave polls the wave's objects (and, for workloads, their Pods from
// the watcher's caches) until wave.Progress says ready or failed, or the
// app's waveTimeout passes. Read errors are retried until the timeout.
func (p *pass) awaitWave(ctx context.Context, w wave.Wave) error {
	if len(w.Objects) == 0 {
		return nil
	}
	timeout := waveTimeout(p.app)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := verdict.ObjectHealth{Object: object.RefOf(w.Objects[0]), Status: string(status.UnknownStatus), Message: "not read yet"}
	tick := time.NewTicker(wavePoll)
	defer tick.Stop()
	for {
		// A direct read, not the watch caches: they may not have seen the
		// apply yet, and an object cached from before it (its old
		// generation observed, so Current) would end the wave too early.
		live, err := p.c.Applier.Live(wctx, p.app.Name, w.Objects)
		var snap *verdict.Snapshot
		if err == nil {
			snap, err = p.r.snapshotOn(wctx, p.c, p.app.Name, p.app.AllowNamespaces, w.Objects, live)
		}
		if err == nil {
			state, oh := wave.Progress(verdict.AssessHealth(snap), live)
			switch state {
			case wave.Ready:
				return nil
			case wave.Failed:
				return &wave.Error{Phase: w.Phase, Wave: w.Number, Object: oh.Object, Status: oh.Status, Message: oh.Message}
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
			return &wave.Error{Phase: w.Phase, Wave: w.Number, Object: last.Object, Status: last.Status, Message: last.Message, Timeout: timeout}
		case <-tick.C:
		}
	}
}

// waveTimeout is how long one of app's waves may take.
func waveTimeout(app *config.App) time.Duration {
	if t := time.Duration(app.WaveTimeout); t > 0 {
		return t
	}
	return config.DefaultWaveTimeout
}

// prepareWave makes the hooks of w ready to apply (see hook.Action): it
// deletes the run-once hooks to replace, waiting until they are gone, and
// returns the objects of w to apply, without the hooks to keep. Only
// `pinbot sync` runs a failed hook again.
func (p *pass) prepareWave(ctx context.Context, w wave.Wave) ([]*unstructured.Unstructured, error) {
	var hooks []*unstructured.Unstructured
	for _, o := range w.Objects {
		if hook.Is(o) {
			hooks = append(hooks, o)
		}
	}
	if len(hooks) == 0 {
		return w.Objects, nil
	}
	live, err := p.c.Applier.Live(ctx, p.app.Name, hooks)
	if err != nil {
		return nil, err
	}
	keep := map[object.Ref]bool{}
	for _, o := range hooks {
		ref := object.RefOf(o)
		step, err := hook.Action(p.app.Name, o, live[ref], p.mode == modeSync)
		if err != nil {
			return nil, err
		}
		switch step {
		case hook.Keep:
			keep[ref] = true
		case hook.Replace:
			if err := p.deleteHook(ctx, w, o, live[ref]); err != nil {
				return nil, err
			}
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range w.Objects {
		if !keep[object.RefOf(o)] {
			out = append(out, o)
		}
	}
	return out, nil
}

// deleteHook deletes the previous run of a hook (foreground, so its Pods
// go first) and polls until it is gone, within the app's waveTimeout.
func (p *pass) deleteHook(ctx context.Context, w wave.Wave, desired, live *unstructured.Unstructured) error {
	timeout := waveTimeout(p.app)
	ref, uid := object.RefOf(desired), live.GetUID()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(wavePoll)
	defer tick.Stop()
	cur := live
	for {
		if cur != nil && cur.GetDeletionTimestamp() == nil {
			// A conflict (the Job's status moved since it was read) deletes
			// nothing; the next look reads it again.
			if _, err := p.c.Applier.DeleteForeground(wctx, cur); err != nil && wctx.Err() == nil {
				return err
			}
		}
		got, err := p.c.Applier.Live(wctx, p.app.Name, []*unstructured.Unstructured{desired})
		if err == nil {
			cur = got[ref]
			if cur == nil || cur.GetUID() != uid {
				return nil
			}
		}
		select {
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return err
			}
			return &wave.Error{Phase: w.Phase, Wave: w.Number, Object: ref, Status: "Terminating", Message: "the previous run of the hook is still being deleted", Timeout: timeout}
		case <-tick.C:
		}
	}
}
