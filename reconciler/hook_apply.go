package reconciler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// hookStep is what a sync does with one hook.
type hookStep int

const (
	// hookCreate: the hook is not in the cluster; apply it.
	hookCreate hookStep = iota
	// hookKeep: the cluster holds this very render of the hook (same
	// config hash): it ran, or runs, already; leave it alone.
	hookKeep
	// hookUpdate: the hook changed and is not run-once; apply it in place.
	hookUpdate
	// hookReplace: a run-once hook (a Job or Pod) changed, or failed and
	// a person asked for the sync: delete the old one and, once gone,
	// create the new one (Helm's before-hook-creation). A Job's template
	// cannot change in place.
	hookReplace
)

// hookAction decides, purely, what a sync does with the hook desired
// given its live copy (nil when absent). A hook runs once per rendered
// content: a re-sync of the same commit, or a new commit that renders it
// unchanged, keeps it (a completed hook Job is not run again). Only
// rerunFailed, `pinbot sync` as a person runs it, runs a failed run-once
// hook again; the loop leaves it failed, and the sync failed, until Git
// changes the hook.
func hookAction(app string, desired, live *unstructured.Unstructured, rerunFailed bool) (hookStep, error) {
	if live == nil {
		return hookCreate, nil
	}
	h, err := ssa.ConfigHash(desired)
	if err != nil {
		return 0, err
	}
	same := live.GetAnnotations()[AnnotationHash] == h && live.GetLabels()[LabelApp] == app
	switch {
	case same && !(rerunFailed && runOnce(live) && hookFailed(live)):
		return hookKeep, nil
	case runOnce(live):
		return hookReplace, nil
	}
	return hookUpdate, nil
}

// runOnce reports whether u is of a kind that runs to completion and
// cannot be changed in place: a batch Job or a Pod.
func runOnce(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return isJob(u) || (gvk.Group == "" && gvk.Kind == "Pod")
}

// hookFailed reports whether a run-once hook has failed: a Job's Failed
// condition is True, or a Pod's phase is Failed.
func hookFailed(u *unstructured.Unstructured) bool {
	if !isJob(u) {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Failed"
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Failed" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// prepareWave makes the hooks of w ready to apply (see hookAction): it
// deletes the run-once hooks to replace, waiting until they are gone, and
// returns the objects of w to apply, without the hooks to keep.
func (r *Reconciler) prepareWave(ctx context.Context, app *App, w Wave, rerunFailed bool) ([]*unstructured.Unstructured, error) {
	var hooks []*unstructured.Unstructured
	for _, o := range w.Objects {
		if isHook(o) {
			hooks = append(hooks, o)
		}
	}
	if len(hooks) == 0 {
		return w.Objects, nil
	}
	live, err := r.applier.Live(ctx, app.Name, hooks)
	if err != nil {
		return nil, err
	}
	keep := map[ObjectRef]bool{}
	for _, o := range hooks {
		ref := RefOf(o)
		step, err := hookAction(app.Name, o, live[ref], rerunFailed)
		if err != nil {
			return nil, err
		}
		switch step {
		case hookKeep:
			keep[ref] = true
		case hookReplace:
			if err := r.deleteHook(ctx, app, w, o, live[ref]); err != nil {
				return nil, err
			}
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range w.Objects {
		if !keep[RefOf(o)] {
			out = append(out, o)
		}
	}
	return out, nil
}

// deleteHook deletes the previous run of a hook (foreground, so its Pods
// go first) and polls until it is gone, within the app's waveTimeout.
func (r *Reconciler) deleteHook(ctx context.Context, app *App, w Wave, desired, live *unstructured.Unstructured) error {
	timeout := time.Duration(app.WaveTimeout)
	if timeout <= 0 {
		timeout = DefaultWaveTimeout
	}
	ref, uid := RefOf(desired), live.GetUID()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(wavePoll)
	defer tick.Stop()
	cur := live
	for {
		if cur != nil && cur.GetDeletionTimestamp() == nil {
			// A conflict (the Job's status moved since it was read) deletes
			// nothing; the next look reads it again.
			if _, err := r.applier.DeleteForeground(wctx, cur); err != nil && wctx.Err() == nil {
				return err
			}
		}
		got, err := r.applier.Live(wctx, app.Name, []*unstructured.Unstructured{desired})
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
			return &WaveError{Phase: w.Phase, Wave: w.Number, Object: ref, Status: "Terminating", Message: "the previous run of the hook is still being deleted", Timeout: timeout}
		case <-tick.C:
		}
	}
}
