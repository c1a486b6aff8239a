package reconciler

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/ssa"
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
// (see waveProgress) before the next wave starts.
type Wave struct {
	// Phase is PhasePreSync or PhasePostSync for a wave of hooks, else
	// PhaseSync.
	Phase   Phase
	Number  int
	Objects []*unstructured.Unstructured
}

// String names the wave in messages: "wave 2", or "PreSync wave 0" for
// a wave of hooks.
func (w Wave) String() string { return waveName(w.Phase, w.Number) }

func waveName(p Phase, n int) string {
	if p == PhaseSync {
		return fmt.Sprintf("wave %d", n)
	}
	return fmt.Sprintf("%s wave %d", p, n)
}

// WaveOf returns u's sync wave: AnnotationSyncWave, else
// AnnotationArgoSyncWave, else 0. A value that is not an integer is a
// *GuardError naming the object: a mistyped wave could run a migration
// after the code that needs it, so it stops the sync rather than default.
func WaveOf(u *unstructured.Unstructured) (int, error) {
	ann := u.GetAnnotations()
	for _, key := range []string{AnnotationSyncWave, AnnotationArgoSyncWave} {
		v, ok := ann[key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, &GuardError{Object: RefOf(u), Reason: fmt.Sprintf("annotation %s: want an integer, got %q", key, v)}
		}
		return n, nil
	}
	return 0, nil
}

// PlanWaves groups objs (a placed render) into waves: first the PreSync
// hooks, then the sync's own objects, then the PostSync hooks (see
// HookOf), each phase in ascending order of its waves; within a wave
// objects keep their given order. An ordinary object's wave is WaveOf; a
// hook's is WaveOf when it declares a sync wave, else its
// helm.sh/hook-weight, as in Argo CD. Objects HookOf skips are left out.
// Pure.
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
func PlanWaves(objs []*unstructured.Unstructured) ([]Wave, error) {
	type key struct {
		phase Phase
		n     int
	}
	var errs []error
	var first []*unstructured.Unstructured // Namespaces and CRDs
	byWave := map[key][]*unstructured.Unstructured{}
	for _, o := range objs {
		if ssa.IsNamespace(o) || ssa.IsCRD(o) {
			first = append(first, o)
			continue
		}
		h, err := HookOf(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := hookWave(o, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if h.Phase == PhaseSkip {
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
			waves = []Wave{{Phase: PhaseSync, Number: 0}}
		}
		waves[0].Objects = append(first, waves[0].Objects...)
	}
	return waves, nil
}

// hookWave is o's wave within its phase: WaveOf, or for a hook that
// declares no sync wave its helm.sh/hook-weight.
func hookWave(o *unstructured.Unstructured, h Hook) (int, error) {
	ann := o.GetAnnotations()
	_, pinbot := ann[AnnotationSyncWave]
	_, argo := ann[AnnotationArgoSyncWave]
	if h.IsHook && !pinbot && !argo {
		return hookWeight(o)
	}
	return WaveOf(o)
}
