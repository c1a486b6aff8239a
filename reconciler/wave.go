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
	Number  int
	Objects []*unstructured.Unstructured
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

// PlanWaves groups objs (a placed render) into waves in ascending order
// of WaveOf; within a wave objects keep their given order. Pure.
//
// Namespaces and CustomResourceDefinitions go at the head of the first
// wave, whatever wave they declare: any later object may live in them or
// be of their kind, and they have no rollout to wait for. (Argo CD keeps
// them in their own wave and orders by kind only within it, so a CRD in
// wave 1 fails its custom resources in wave -1; pinbot does not.) The
// Applier then applies each wave's Namespaces, then its CRDs, then the
// rest (see batches).
//
// Every bad wave annotation is reported, joined, and no plan is returned.
func PlanWaves(objs []*unstructured.Unstructured) ([]Wave, error) {
	var errs []error
	var first []*unstructured.Unstructured // Namespaces and CRDs
	byWave := map[int][]*unstructured.Unstructured{}
	for _, o := range objs {
		n, err := WaveOf(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ssa.IsNamespace(o) || ssa.IsCRD(o) {
			first = append(first, o)
			continue
		}
		byWave[n] = append(byWave[n], o)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	numbers := make([]int, 0, len(byWave))
	for n := range byWave {
		numbers = append(numbers, n)
	}
	sort.Ints(numbers)
	var waves []Wave
	for _, n := range numbers {
		waves = append(waves, Wave{Number: n, Objects: byWave[n]})
	}
	if len(first) > 0 {
		if len(waves) == 0 {
			waves = []Wave{{Number: 0}}
		}
		waves[0].Objects = append(first, waves[0].Objects...)
	}
	return waves, nil
}
