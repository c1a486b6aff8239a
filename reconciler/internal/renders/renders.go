// Package renders keeps what a verify-only app's passes rendered, between
// the passes: the workloads of its head and of the revision its deployer
// deployed, each as its JSON.
package renders

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Kept holds renders by revision (a commit, or a chart's version). A
// render is kept as its objects' JSON, a fraction of the memory of the
// maps an Unstructured holds: 2,750 apps' renders as maps were 11.5 MB,
// a tenth of a sharded replica's live heap. The zero Kept holds none.
type Kept struct {
	by map[string][][]byte
}

// Get returns the render kept for rev, as objects the caller owns; ok is
// false when none is kept.
func (k *Kept) Get(rev string) (objs []*unstructured.Unstructured, ok bool) {
	raws, ok := k.by[rev]
	if !ok {
		return nil, false
	}
	objs = make([]*unstructured.Unstructured, len(raws))
	for i, raw := range raws {
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(raw); err != nil {
			return nil, false // not as Put kept it: render again
		}
	}
	return objs, true
}

// Put keeps objs as the render of rev. A render that cannot be kept
// (an object with no JSON form) is not: the next pass renders again.
func (k *Kept) Put(rev string, objs []*unstructured.Unstructured) {
	raws := make([][]byte, len(objs))
	for i, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			delete(k.by, rev)
			return
		}
		raws[i] = raw
	}
	if k.by == nil {
		k.by = map[string][][]byte{}
	}
	k.by[rev] = raws
}

// Only drops the renders of revisions other than revs.
func (k *Kept) Only(revs ...string) {
	for rev := range k.by {
		keep := false
		for _, r := range revs {
			keep = keep || r == rev
		}
		if !keep {
			delete(k.by, rev)
		}
	}
}
