// Package wave plans the order of a sync: which objects are applied
// together, in which phase and wave, and when a wave may end so the next
// one starts. Pure: the reconciler applies the plan and feeds the wave's
// health back in (Progress).
package wave

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Sync-wave annotations. A sync applies its objects wave by wave in
// ascending order, and waits for each wave to be ready before the next.
const (
	// AnnotationSyncWave holds an object's wave, an integer ("-1", "0",
	// "5"). Default 0.
	AnnotationSyncWave = "pinbot.dev/sync-wave"
	// AnnotationArgoSyncWave is Argo CD's wave annotation, honoured so that
	// manifests move from Argo CD unchanged. AnnotationSyncWave wins when
	// an object carries both.
	AnnotationArgoSyncWave = "argocd.argoproj.io/sync-wave"
)

// Wave is one step of a sync: objects applied together and then awaited
// (see Progress) before the next wave starts.
type Wave struct {
	// Phase is hook.PreSync or hook.PostSync for a wave of hooks, else
	// hook.Sync.
	Phase   hook.Phase
	Number  int
	Objects []*unstructured.Unstructured
}

// String names the wave in messages: "wave 2", or "PreSync wave 0" for
// a wave of hooks.
func (w Wave) String() string { return Name(w.Phase, w.Number) }

// Name names wave n of phase p: "wave 2", or "PreSync wave 0".
func Name(p hook.Phase, n int) string {
	if p == hook.Sync {
		return fmt.Sprintf("wave %d", n)
	}
	return fmt.Sprintf("%s wave %d", p, n)
}

// Of returns u's sync wave: AnnotationSyncWave, else
// AnnotationArgoSyncWave, else 0. A value that is not an integer is a
// *guard.Error naming the object: a mistyped wave could run a migration
// after the code that needs it, so it stops the sync rather than default.
func Of(u *unstructured.Unstructured) (int, error) {
	ann := u.GetAnnotations()
	for _, key := range []string{AnnotationSyncWave, AnnotationArgoSyncWave} {
		v, ok := ann[key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, &guard.Error{Object: object.RefOf(u), Reason: fmt.Sprintf("annotation %s: want an integer, got %q", key, v)}
		}
		return n, nil
	}
	return 0, nil
}

// Plan groups objs (a placed render) into waves: first the PreSync
// hooks, then the sync's own objects, then the PostSync hooks (see
// hook.Of), each phase in ascending order of its waves; within a wave
// objects keep their given order. An ordinary object's wave is Of; a
// hook's is WaveOf when it declares a sync wave, else its
// helm.sh/hook-weight, as in Argo CD. Objects hook.Of skips are left out.
//
// Namespaces and CustomResourceDefinitions go at the head of the first
// wave, whatever wave or phase they declare: any later object may live in
// them or be of their kind, and they have no rollout to wait for. (Argo
// CD keeps them in their own wave and orders by kind only within it, so a
// CRD in wave 1 fails its custom resources in wave -1; pinbot does not.)
// So the CRDs of a chart's crds/ directory precede its pre-install hooks.
// The Applier then applies each wave's Namespaces, then its CRDs, then the
// rest (see batches).
//
// Every bad wave or hook annotation is reported, joined, and no plan is
// returned.
func Plan(objs []*unstructured.Unstructured) ([]Wave, error) {
	type key struct {
		phase hook.Phase
		n     int
	}
	var errs []error
	var first []*unstructured.Unstructured // Namespaces and CRDs
	byWave := map[key][]*unstructured.Unstructured{}
	for _, o := range objs {
		if object.IsNamespace(o) || object.IsCRD(o) {
			first = append(first, o)
			continue
		}
		h, err := hook.Of(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := within(o, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if h.Phase == hook.Skip {
			continue
		}
		k := key{h.Phase, n}
		byWave[k] = append(byWave[k], o)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	keys := make([]key, 0, len(byWave))
	for k := range byWave {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].phase != keys[j].phase {
			return keys[i].phase < keys[j].phase
		}
		return keys[i].n < keys[j].n
	})
	var waves []Wave
	for _, k := range keys {
		waves = append(waves, Wave{Phase: k.phase, Number: k.n, Objects: byWave[k]})
	}
	if len(first) > 0 {
		if len(waves) == 0 {
			waves = []Wave{{Phase: hook.Sync, Number: 0}}
		}
		waves[0].Objects = append(first, waves[0].Objects...)
	}
	return waves, nil
}

// within is o's wave within its phase: Of, or for a hook that declares no
// sync wave its helm.sh/hook-weight.
func within(o *unstructured.Unstructured, h hook.Hook) (int, error) {
	ann := o.GetAnnotations()
	_, pinbot := ann[AnnotationSyncWave]
	_, argo := ann[AnnotationArgoSyncWave]
	if h.IsHook && !pinbot && !argo {
		return hook.Weight(o)
	}
	return Of(o)
}

// Error stops a sync: an object of a wave failed, or the wave was not
// ready within the app's waveTimeout. Later waves are not applied.
type Error struct {
	// Phase is the wave's phase: hook.PreSync or hook.PostSync for hooks.
	Phase  hook.Phase
	Wave   int
	Object object.Ref
	// Status is the object's kstatus status: Failed, or what it was when
	// the wave timed out.
	Status  string
	Message string
	// Timeout is the app's waveTimeout when the wave timed out, else 0.
	Timeout time.Duration
}

// Error names the wave, the object and the cause.
func (e *Error) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("%s: %s not ready after %s: %s: %s", Name(e.Phase, e.Wave), e.Object, e.Timeout, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s failed: %s", Name(e.Phase, e.Wave), e.Object, e.Message)
}

// State is where one wave stands.
type State int

// States Progress decides.
const (
	Waiting State = iota
	Ready
	Failed
)

// Progress decides whether a wave whose objects' health is rep
// (verdict.AssessHealth over the wave's objects) may end: every object is
// Current, and every Job has completed (its Complete condition is True;
// kstatus calls a Job Current once it has started). A Failed object fails
// the wave. It returns the object that failed the wave or, while waiting,
// the first object it waits for.
func Progress(rep verdict.HealthReport, live map[object.Ref]*unstructured.Unstructured) (State, verdict.ObjectHealth) {
	var waiting *verdict.ObjectHealth
	for _, oh := range rep.Objects {
		switch status.Status(oh.Status) {
		case status.FailedStatus:
			return Failed, oh
		case status.CurrentStatus:
			if l := live[oh.Object]; l != nil && object.IsJob(l) && !jobCompleted(l) {
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
		return Waiting, *waiting
	}
	return Ready, verdict.ObjectHealth{}
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
