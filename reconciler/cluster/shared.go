package cluster

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Shared is a synced watch of the deployers' objects of one kind and
// namespace that another part of pinbot keeps (discovery's), which
// Objects reads instead of watching the same objects again: the API
// server then sends a replica each of them once.
type Shared interface {
	Resource() schema.GroupVersionResource
	Namespace() string
	HasSynced() bool
	// Kept returns the version of the object ns/name and its JSON
	// (compact.JSON), nil for a stub; ok is false when the watch does
	// not hold it.
	Kept(ns, name string) (version string, raw []byte, ok bool)
	// Serve has the watch tell changed of every change of an object,
	// and, once trimmed, keep the JSON of the objects reads picks (of
	// all when reads is nil); a call replaces the one before.
	Serve(reads func(ns, name string) bool, changed func(ns, name string))
	// Trim drops the JSON of the objects reads does not pick, kept of
	// every object until the first Trim, and returns how many objects
	// it picks are stubs.
	Trim() (stubs int)
}

// Share has c read the objects of shared from them, and tell its apps
// of their changes.
func (c *Objects) Share(shared ...Shared) {
	for _, s := range shared {
		gvr := s.Resource()
		var reads func(ns, name string) bool
		if c.reads != nil {
			reads = func(ns, name string) bool { return c.reads(gvr, ns, name) }
		}
		changed := func(ns, name string) {
			c.mu.Lock()
			delete(c.held, heldKey{objectKey{gvr: gvr, ns: ns}, name}) // held for a version gone
			c.mu.Unlock()
			if c.onChange != nil {
				c.onChange(gvr, ns, name)
			}
		}
		s.Serve(reads, changed)
		c.mu.Lock()
		key := objectKey{gvr: gvr, ns: s.Namespace()}
		c.shared[key] = append(c.shared[key], s)
		c.mu.Unlock()
	}
	if c.reads != nil { // a replica that took no shard by then keeps no JSON it does not read
		go func() {
			select {
			case <-c.stop:
			case <-time.After(trimWithin):
				for _, s := range shared {
					s.Trim()
				}
			}
		}()
	}
}

// trimWithin is how long a shared watch keeps the JSON of every object
// for a replica that has taken no shard yet (Shared.Trim).
const trimWithin = 2 * time.Minute
