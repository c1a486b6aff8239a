package reconciler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// appState is what the Reconciler remembers about one app between passes.
// mu guards every field below it; its zero value is ready to use.
type appState struct {
	trigger chan struct{} // a full pass on demand
	observe chan struct{} // the app's Pods changed

	mu sync.Mutex
	// commit and desired are the last render fetched from Git (desired
	// holds the placed objects of commit), which follow-up passes reuse.
	commit  string
	desired []*unstructured.Unstructured
	// awaiting says the latest sync waits for its verification.
	awaiting bool
	// sourceDown and clusterDown are when Git and the Kubernetes API
	// stopped answering (zero while they answer).
	sourceDown  time.Time
	clusterDown time.Time
	// last is the last pass's status, for the metrics; lastV the last
	// verification a pass made, for the dashboard.
	last  *AppStatus
	lastV *Verification

	// diffs holds each object's last dry-run diff, valid while the live
	// object (uid, resourceVersion) and Git's rendering of it (config
	// hash) stay the same: an idle app is diffed without a dry run.
	diffs map[ObjectRef]diffEntry
	// guard is self-heal's drift-war guard (heal.go).
	guard warGuard
	// kinds are the inventory's kinds, watched for orphans; listed says
	// the one full inventory LIST was made (orphans.go).
	kinds  map[schema.GroupVersionKind]bool
	listed bool
	// lastDrift and lastOrphans are the latest full pass's findings,
	// which follow-up passes (no Git fetch, no diff) report unchanged.
	lastDrift   []Drift
	lastOrphans []ObjectRef
	// wake is signalled when an inventory object's content changes.
	wake chan struct{}
	// vo is a verify-only app's state (verifyonly.go).
	vo verifyOnlyState
}

// diffEntry is one object's cached diff.
type diffEntry struct {
	uid   types.UID
	rv    string
	hash  string
	drift []Drift // before ignore rules
}

// wakeup returns the channel signalled when the app's inventory changes.
func (st *appState) wakeup() chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.wake == nil {
		st.wake = make(chan struct{}, 1)
	}
	return st.wake
}

// cachedDiff returns the cached diff of ref if live and hash still match
// it.
func (st *appState) cachedDiff(ref ObjectRef, live *unstructured.Unstructured, hash string) ([]Drift, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.diffs[ref]
	if !ok || e.uid != live.GetUID() || e.rv != live.GetResourceVersion() || e.hash != hash {
		return nil, false
	}
	return e.drift, true
}

// storeDiff caches ref's diff. When Git's rendering of ref changed, its
// drift-war count starts over: a person changed the manifest.
func (st *appState) storeDiff(ref ObjectRef, live *unstructured.Unstructured, hash string, drift []Drift) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.diffs == nil {
		st.diffs = map[ObjectRef]diffEntry{}
	}
	if prev, ok := st.diffs[ref]; ok && prev.hash != hash {
		st.guard.reset(ref)
	}
	st.diffs[ref] = diffEntry{uid: live.GetUID(), rv: live.GetResourceVersion(), hash: hash, drift: drift}
}

// clusterDownSince records that the API stopped answering at now, unless
// it already had, and returns since when.
func (st *appState) clusterDownSince(now time.Time) time.Time {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.clusterDown.IsZero() {
		st.clusterDown = now
	}
	return st.clusterDown
}

// clusterUp records that the API answers.
func (st *appState) clusterUp() {
	st.mu.Lock()
	st.clusterDown = time.Time{}
	st.mu.Unlock()
}

// war returns the drift-war message of the app, or "".
func (st *appState) war() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.guard.war()
}

// sourceVerified reports whether commit is what the app's latest fetch of
// Git returned, with the source reachable since: the condition for acting
// on commit (apply, heal, prune). While Git cannot be fetched or read, it
// is false, and pinbot changes nothing.
func (st *appState) sourceVerified(commit string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sourceDown.IsZero() && commit != "" && st.commit == commit
}

func (st *appState) isAwaiting() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.awaiting
}
