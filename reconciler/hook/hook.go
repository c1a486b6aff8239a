// Package hook says how a sync treats each rendered object: an ordinary
// object of the sync's waves, a Helm or Argo CD hook run once per rendered
// content in its phase (PreSync before every wave, PostSync after), or an
// object never applied; and, for a hook, what a sync does with the copy
// the cluster holds. It also reads Argo CD's per-object sync and compare
// options. Pure.
package hook

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/object"
)

// Hook and Argo CD option annotations pinbot honours on the objects it
// applies, so that Helm charts and manifests written for Argo CD move over
// unchanged.
const (
	// AnnotationHelmHook lists a Helm hook's events ("pre-install,pre-upgrade").
	AnnotationHelmHook = "helm.sh/hook"
	// AnnotationHelmHookWeight orders hooks within their phase, as a sync
	// wave does (Argo CD maps it the same way).
	AnnotationHelmHookWeight = "helm.sh/hook-weight"
	// AnnotationArgoHook lists an Argo CD hook's phases ("PreSync",
	// "Sync", "PostSync", "Skip"). It wins over AnnotationHelmHook, as in
	// Argo CD.
	AnnotationArgoHook = "argocd.argoproj.io/hook"
	// AnnotationArgoSyncOptions holds Argo CD's per-object sync options;
	// pinbot honours "Prune=false".
	AnnotationArgoSyncOptions = "argocd.argoproj.io/sync-options"
	// AnnotationArgoCompareOptions holds Argo CD's per-object compare
	// options; pinbot honours "IgnoreExtraneous".
	AnnotationArgoCompareOptions = "argocd.argoproj.io/compare-options"
)

// Phase is when in a sync an object is applied: the pre-sync hooks, the
// sync's own waves, then the post-sync hooks. Each phase runs its own
// waves in ascending order.
type Phase int

// Phases in the order a sync runs them; the zero value is Sync. Skip
// objects are never applied.
const (
	PreSync  Phase = -1
	Sync     Phase = 0
	PostSync Phase = 1
	Skip     Phase = 2
)

// String is Argo CD's name of the phase.
func (p Phase) String() string {
	switch p {
	case PreSync:
		return "PreSync"
	case Sync:
		return "Sync"
	case PostSync:
		return "PostSync"
	}
	return "Skip"
}

// Hook says how a sync treats one object.
type Hook struct {
	// Phase the object is applied in.
	Phase Phase
	// IsHook is true for a Helm or Argo CD hook: it is applied by a sync
	// only, once per rendered content (see Action), and is never
	// compared, diffed, healed or reported missing between syncs.
	IsHook bool
}

// Of reads u's hook annotations.
//
//   - argocd.argoproj.io/hook (comma-separated; it wins over Helm's):
//     PreSync and PostSync are hooks of those phases, Sync a hook of the
//     sync's own waves; Skip, and the phases pinbot does not run (SyncFail,
//     PreDelete, PostDelete), mean the object is not applied. Several
//     phases: the earliest counts.
//   - helm.sh/hook (comma-separated): pre-install and pre-upgrade are
//     PreSync hooks, post-install and post-upgrade PostSync hooks; a test
//     hook, and a hook that runs only on delete or rollback, is not
//     applied.
//   - neither: an ordinary object of the sync's waves.
//
// An unknown Argo CD phase is a *guard.Error naming the object: a mistyped
// phase could run a migration after the code that needs it.
func Of(u *unstructured.Unstructured) (Hook, error) {
	ann := u.GetAnnotations()
	if v, ok := ann[AnnotationArgoHook]; ok {
		h := Hook{Phase: Skip, IsHook: true}
		for _, p := range splitList(v) {
			var got Phase
			switch p {
			case "PreSync":
				got = PreSync
			case "Sync":
				got = Sync
			case "PostSync":
				got = PostSync
			case "Skip":
				return Hook{Phase: Skip, IsHook: true}, nil
			case "SyncFail", "PreDelete", "PostDelete":
				continue
			default:
				return Hook{}, &guard.Error{Object: object.RefOf(u), Reason: fmt.Sprintf("annotation %s: unknown phase %q (want PreSync, Sync, PostSync or Skip)", AnnotationArgoHook, p)}
			}
			if got < h.Phase {
				h.Phase = got
			}
		}
		return h, nil
	}
	v, ok := ann[AnnotationHelmHook]
	if !ok {
		return Hook{Phase: Sync}, nil
	}
	h := Hook{Phase: Skip, IsHook: true}
	for _, e := range splitList(v) {
		switch e {
		case "test", "test-success":
			return Hook{Phase: Skip, IsHook: true}, nil
		case "pre-install", "pre-upgrade":
			h.Phase = PreSync
		case "post-install", "post-upgrade":
			if h.Phase == Skip {
				h.Phase = PostSync
			}
		}
	}
	return h, nil
}

// Is reports whether u is a hook (see Of); a bad annotation counts as
// one, so that it is never healed (wave.Plan refuses the sync).
func Is(u *unstructured.Unstructured) bool {
	h, err := Of(u)
	return err != nil || h.IsHook
}

// Applicable drops the objects a sync never applies (Of says Skip): they
// are not part of what Git asks the cluster to hold. Objects with a bad
// hook annotation stay, for wave.Plan to refuse.
func Applicable(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := objs[:0:0]
	for _, o := range objs {
		if h, err := Of(o); err == nil && h.Phase == Skip {
			continue
		}
		out = append(out, o)
	}
	return out
}

// Without returns objs without the hooks (see Is).
func Without(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := objs[:0:0]
	for _, o := range objs {
		if !Is(o) {
			out = append(out, o)
		}
	}
	return out
}

// Weight is a hook's wave within its phase when it declares no sync
// wave: helm.sh/hook-weight, else 0.
func Weight(u *unstructured.Unstructured) (int, error) {
	v, ok := u.GetAnnotations()[AnnotationHelmHookWeight]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, &guard.Error{Object: object.RefOf(u), Reason: fmt.Sprintf("annotation %s: want an integer, got %q", AnnotationHelmHookWeight, v)}
	}
	return n, nil
}

// NoPrune reports whether u carries Argo CD's sync option Prune=false.
func NoPrune(u *unstructured.Unstructured) bool {
	return hasOption(u, AnnotationArgoSyncOptions, "Prune=false")
}

// IgnoreExtraneous reports whether u carries Argo CD's compare option
// IgnoreExtraneous: once Git no longer declares it, it is not reported as
// an orphan.
func IgnoreExtraneous(u *unstructured.Unstructured) bool {
	return hasOption(u, AnnotationArgoCompareOptions, "IgnoreExtraneous")
}

// hasOption reports whether the comma-separated option list in u's
// annotation key holds opt.
func hasOption(u *unstructured.Unstructured, key, opt string) bool {
	for _, o := range splitList(u.GetAnnotations()[key]) {
		if o == opt {
			return true
		}
	}
	return false
}

// splitList splits a comma-separated annotation value, trimming spaces
// and dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Step is what a sync does with one hook.
type Step int

// Steps Action decides.
const (
	// Create: the hook is not in the cluster; apply it.
	Create Step = iota
	// Keep: the cluster holds this very render of the hook (same
	// config hash): it ran, or runs, already; leave it alone.
	Keep
	// Update: the hook changed and is not run-once; apply it in place.
	Update
	// Replace: a run-once hook (a Job or Pod) changed, or failed and
	// a person asked for the sync: delete the old one and, once gone,
	// create the new one (Helm's before-hook-creation). A Job's template
	// cannot change in place.
	Replace
)

// Action decides what a sync does with the hook desired
// given its live copy (nil when absent). A hook runs once per rendered
// content: a re-sync of the same commit, or a new commit that renders it
// unchanged, keeps it (a completed hook Job is not run again). Only
// rerunFailed, `pinbot sync` as a person runs it, runs a failed run-once
// hook again; the loop leaves it failed, and the sync failed, until Git
// changes the hook.
func Action(app string, desired, live *unstructured.Unstructured, rerunFailed bool) (Step, error) {
	if live == nil {
		return Create, nil
	}
	same, err := object.AsApplied(app, desired, live)
	if err != nil {
		return 0, err
	}
	switch {
	case same && !(rerunFailed && runOnce(live) && failed(live)):
		return Keep, nil
	case runOnce(live):
		return Replace, nil
	}
	return Update, nil
}

// runOnce reports whether u is of a kind that runs to completion and
// cannot be changed in place: a batch Job or a Pod.
func runOnce(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return object.IsJob(u) || (gvk.Group == "" && gvk.Kind == "Pod")
}

// failed reports whether a run-once hook has failed: a Job's Failed
// condition is True, or a Pod's phase is Failed.
func failed(u *unstructured.Unstructured) bool {
	if !object.IsJob(u) {
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
