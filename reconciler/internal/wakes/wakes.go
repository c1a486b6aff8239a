// Package wakes indexes apps by the namespaces where a Pod event may
// concern them, so that a cluster's callback wakes those apps without
// looking at every app.
package wakes

import (
	"slices"
	"sync"
)

// Index names, by namespace, the apps whose workloads a pass found there
// or that may deploy there (allowNamespaces). It only grows, by
// namespaces, while serve runs; its reader skips a name no longer in
// its set of apps.
type Index struct {
	mu sync.RWMutex
	ns map[string][]string
}

// New returns an empty Index.
func New() *Index { return &Index{ns: map[string][]string{}} }

// Add notes app under each of namespaces.
func (x *Index) Add(app string, namespaces ...string) {
	// Every pass notes its namespaces, which are almost always noted
	// already: look under the read lock before taking the write lock.
	x.mu.RLock()
	noted := true
	for _, ns := range namespaces {
		noted = noted && slices.Contains(x.ns[ns], app)
	}
	x.mu.RUnlock()
	if noted {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, ns := range namespaces {
		if !slices.Contains(x.ns[ns], app) {
			x.ns[ns] = append(x.ns[ns], app)
		}
	}
}

// In are the apps noted under ns; the caller must not change them.
func (x *Index) In(ns string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.ns[ns]
}
