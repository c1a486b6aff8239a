package reconciler

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Phases in the order a sync runs them; the zero value is PhaseSync.
// PhaseSkip objects are never applied.
const (
	PhasePreSync  Phase = -1
	PhaseSync     Phase = 0
	PhasePostSync Phase = 1
	PhaseSkip     Phase = 2
)

// String is Argo CD's name of the phase.
func (p Phase) String() string {
	switch p {
	case PhasePreSync:
		return "PreSync"
	case PhaseSync:
		return "Sync"
	case PhasePostSync:
		return "PostSync"
	}
	return "Skip"
}

// Hook says how a sync treats one object.
type Hook struct {
	// Phase the object is applied in.
	Phase Phase
	// IsHook is true for a Helm or Argo CD hook: it is applied by a sync
	// only, once per rendered content (see hookAction), and is never
	// compared, diffed, healed or reported missing between syncs.
	IsHook bool
}

// HookOf reads u's hook annotations. Pure.
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
// An unknown Argo CD phase is a *GuardError naming the object: a mistyped
// phase could run a migration after the code that needs it.
func HookOf(u *unstructured.Unstructured) (Hook, error) {
	ann := u.GetAnnotations()
	if v, ok := ann[AnnotationArgoHook]; ok {
		h := Hook{Phase: PhaseSkip, IsHook: true}
		for _, p := range splitList(v) {
			var got Phase
			switch p {
			case "PreSync":
				got = PhasePreSync
			case "Sync":
				got = PhaseSync
			case "PostSync":
				got = PhasePostSync
			case "Skip":
				return Hook{Phase: PhaseSkip, IsHook: true}, nil
			case "SyncFail", "PreDelete", "PostDelete":
				continue
			default:
				return Hook{}, &GuardError{Object: RefOf(u), Reason: fmt.Sprintf("annotation %s: unknown phase %q (want PreSync, Sync, PostSync or Skip)", AnnotationArgoHook, p)}
			}
			if got < h.Phase {
				h.Phase = got
			}
		}
		return h, nil
	}
	v, ok := ann[AnnotationHelmHook]
	if !ok {
		return Hook{Phase: PhaseSync}, nil
	}
	h := Hook{Phase: PhaseSkip, IsHook: true}
	for _, e := range splitList(v) {
		switch e {
		case "test", "test-success":
			return Hook{Phase: PhaseSkip, IsHook: true}, nil
		case "pre-install", "pre-upgrade":
			h.Phase = PhasePreSync
		case "post-install", "post-upgrade":
			if h.Phase == PhaseSkip {
				h.Phase = PhasePostSync
			}
		}
	}
	return h, nil
}

// isHook reports whether u is a hook (see HookOf); a bad annotation counts
// as one, so that it is never healed (PlanWaves refuses the sync).
func isHook(u *unstructured.Unstructured) bool {
	h, err := HookOf(u)
	return err != nil || h.IsHook
}

// applicable drops the objects a sync never applies (HookOf says
// PhaseSkip): they are not part of what Git asks the cluster to hold.
// Objects with a bad hook annotation stay, for PlanWaves to refuse.
func applicable(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := objs[:0:0]
	for _, o := range objs {
		if h, err := HookOf(o); err == nil && h.Phase == PhaseSkip {
			continue
		}
		out = append(out, o)
	}
	return out
}

// withoutHooks returns objs without the hooks (see isHook).
func withoutHooks(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := objs[:0:0]
	for _, o := range objs {
		if !isHook(o) {
			out = append(out, o)
		}
	}
	return out
}

// hookWeight is a hook's wave within its phase when it declares no sync
// wave: helm.sh/hook-weight, else 0.
func hookWeight(u *unstructured.Unstructured) (int, error) {
	v, ok := u.GetAnnotations()[AnnotationHelmHookWeight]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, &GuardError{Object: RefOf(u), Reason: fmt.Sprintf("annotation %s: want an integer, got %q", AnnotationHelmHookWeight, v)}
	}
	return n, nil
}

// argoNoPrune reports whether u carries Argo CD's sync option
// Prune=false.
func argoNoPrune(u *unstructured.Unstructured) bool {
	return hasOption(u, AnnotationArgoSyncOptions, "Prune=false")
}

// ignoreExtraneous reports whether u carries Argo CD's compare option
// IgnoreExtraneous: once Git no longer declares it, it is not reported as
// an orphan.
func ignoreExtraneous(u *unstructured.Unstructured) bool {
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
