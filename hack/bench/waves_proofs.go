package main

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/serve/proofs"
)

// proofWatch follows every Proof object of the bench's cluster with one
// watch: when each namespace's Proof first showed Ready for a digest, and
// how many times serve wrote one.
type proofWatch struct {
	mu      sync.Mutex
	readyAt map[string]time.Time // "NAMESPACE DIGEST"
	writes  int
	// last is each Proof's status as last seen, and changed counts, by
	// status field, what the writes changed.
	last    map[string]map[string]any
	changed map[string]int
}

// watchProofs starts following the Proofs until ctx ends.
func watchProofs(ctx context.Context, dyn dynamic.Interface) *proofWatch {
	pw := &proofWatch{readyAt: map[string]time.Time{}, last: map[string]map[string]any{}, changed: map[string]int{}}
	go func() {
		rv := ""
		for ctx.Err() == nil {
			w, err := dyn.Resource(proofs.GVR).Namespace("").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = obj.GetResourceVersion()
				pw.saw(ev.Type, obj)
			}
		}
	}()
	return pw
}

// saw notes one event of a Proof.
func (pw *proofWatch) saw(t watch.EventType, obj *unstructured.Unstructured) {
	now := time.Now()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if t == watch.Modified || t == watch.Added {
		pw.writes++
		st, _, _ := unstructured.NestedMap(obj.Object, "status")
		was := pw.last[obj.GetNamespace()]
		for k, v := range st {
			if !reflect.DeepEqual(was[k], v) {
				pw.changed[k]++
			}
		}
		pw.last[obj.GetNamespace()] = st
	}
	pinned, _, _ := unstructured.NestedStringSlice(obj.Object, "status", "pinned")
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	ready := slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Ready" && m["status"] == "True"
	})
	for _, d := range pinned {
		if key := obj.GetNamespace() + " " + d; ready && len(pinned) == 1 && pw.readyAt[key].IsZero() {
			pw.readyAt[key] = now
		}
	}
}

// ready is when the last of namespaces' Proofs showed Ready for digest,
// and whether every one has.
func (pw *proofWatch) ready(namespaces []string, digest string) (time.Time, bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var last time.Time
	for _, ns := range namespaces {
		at := pw.readyAt[ns+" "+digest]
		if at.IsZero() {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

// at reports whether every Proof there is carries commit.
func (pw *proofWatch) at(commit string) bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	for _, st := range pw.last {
		if st["commit"] != commit {
			return false
		}
	}
	return len(pw.last) > 0
}

// written is how many times serve has written a Proof so far, and what
// those writes changed, by status field.
func (pw *proofWatch) written() (int, map[string]int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.writes, maps.Clone(pw.changed)
}
