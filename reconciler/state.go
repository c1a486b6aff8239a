package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/heal"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// appState is what the Reconciler remembers about one app between passes.
//
// Passes of one app take turns (passMu), and the pass holding passMu owns
// the fields under "owned by the pass": nothing else reads them. The few
// fields other goroutines read (the metrics, the dashboard, the watch
// callbacks, the webhooks) are under mu, or atomic.
type appState struct {
	trigger chan struct{} // a full pass on demand
	// fresh asks the next loop pass to read the deployer's objects from
	// the API server rather than the watch: it was asked for (Trigger),
	// maybe just after the deployer changed them.
	fresh   atomic.Bool
	observe chan struct{} // the app's Pods changed
	wake    chan struct{} // an inventory object's content changed

	// awaiting says the latest sync waits for its verification (Sync
	// with a wait follows it).
	awaiting atomic.Bool
	// ownedSince is when this process's loop of the app began (Unix
	// nanoseconds; 0 while it runs none): a listing that began later
	// holds what the app's last owner applied (orphans.go).
	ownedSince atomic.Int64

	passMu sync.Mutex // held by the pass under way

	// owner is a verify-only app's deployer object, as the last pass
	// read it, for Events.
	owner atomic.Pointer[corev1.ObjectReference]
	// cluster is the cluster the last pass read, so that one cluster
	// going away wakes only its apps, and the app's Proof is written
	// beside its Pods (ClusterOf).
	cluster atomic.Pointer[cluster.Cluster]

	// Owned by the pass.

	// commit and desired are the last render fetched from Git (desired
	// holds the placed objects of commit), which follow-up passes reuse.
	commit  string
	desired []*unstructured.Unstructured
	// sourceDown and clusterDown are when Git and the Kubernetes API
	// stopped answering (zero while they answer).
	sourceDown  time.Time
	clusterDown time.Time
	// diffs holds each object's last dry-run diff, valid while the live
	// object (uid, resourceVersion) and Git's rendering of it (config
	// hash) stay the same: an idle app is diffed without a dry run.
	diffs map[object.Ref]cachedDiff
	// guard is self-heal's drift-war guard.
	guard heal.Guard
	// kinds are the inventory's kinds, watched for orphans, and those
	// of every object a sync applied; listed says the one full inventory
	// LIST was made (orphans.go).
	kinds  map[schema.GroupVersionKind]bool
	listed bool
	// lastDrift and lastOrphans are the latest full pass's findings,
	// which follow-up passes (no Git fetch, no diff) report unchanged.
	lastDrift   []diff.Field
	lastOrphans []object.Ref
	// vo is a verify-only app's renders (observer.go).
	vo observed

	mu sync.Mutex // guards the fields below
	// last is the last pass's status, for the metrics; lastV the last
	// verification a pass made, for the dashboard.
	last  *status.App
	lastV *verdict.Verification
	// workloads are the names of the app's workloads by namespace, as
	// the last pass found them: their Pods' and ReplicaSets' events wake
	// the loop (runsIn). trackedKey and trackedBranch are the repository
	// (its gitforge.RepoKey) and branch a verify-only app's deployer's
	// object named at the last pass, for push webhooks (Following).
	workloads     map[string][]string
	trackedKey    string
	trackedBranch string
	// inputs are what the last render of the app's branch read (nil
	// before one), for TriggerChanged.
	inputs *inputs
}

// since is when a listing of the app's inventory must have begun to
// serve its pass: when this process's loop of it began, or now.
func (st *appState) since() time.Time {
	if n := st.ownedSince.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Now()
}

// track notes the repository and branch a verify-only app's deployer
// names, for Following.
func (st *appState) track(a config.App) {
	key := gitforge.RepoKey(a.Repo)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.trackedKey, st.trackedBranch = key, a.Branch
}

func newAppState() *appState {
	return &appState{trigger: make(chan struct{}, 1), observe: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
}

// cachedDiff is one object's last diff.
type cachedDiff struct {
	uid    types.UID
	rv     string
	hash   string
	fields []diff.Field // before ignore rules
}

// remember keeps s as the app's last status, for the metrics, and v, when
// the pass verified, as its last verification.
//
// It reports whether what a proof is judged on (sync, health, each
// container's verdict and readiness) changed since the last pass.
func (st *appState) remember(s *status.App, v *verdict.Verification) (changed bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	changed = proofKey(s, v) != proofKey(st.last, st.lastV)
	if s != nil {
		st.last = s
	}
	if v != nil {
		st.lastV = v
	}
	return changed
}

// proofKey is what a proof is judged on in s and v, as one string.
func proofKey(s *status.App, v *verdict.Verification) string {
	var b strings.Builder
	if s != nil {
		fmt.Fprintf(&b, "%s %s %s %t|", s.Commit, s.Sync, s.Health, s.Verified)
	}
	if v != nil {
		for _, c := range v.Containers {
			fmt.Fprintf(&b, "%s/%s/%s %s %s %t %s|", c.Namespace, c.Pod, c.Container, c.Verdict, c.RunningDigest, c.Ready, c.Waiting)
		}
	}
	return b.String()
}

// forget drops the last pass's status and verification: another replica
// passes the app now, and the status it stores is the one to show.
func (st *appState) forget() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last, st.lastV = nil, nil
}

// lastPass returns the last pass's status and verification.
func (st *appState) lastPass() (*status.App, *verdict.Verification) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last, st.lastV
}

// setWorkloads keeps the workloads among desired, for runsIn, and
// returns their namespaces.
func (st *appState) setWorkloads(desired []*unstructured.Unstructured) []string {
	w := map[string][]string{}
	var namespaces []string
	for _, o := range desired {
		if verdict.IsWorkload(o) {
			ns := o.GetNamespace()
			if _, ok := w[ns]; !ok {
				namespaces = append(namespaces, ns)
			}
			w[ns] = append(w[ns], o.GetName())
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.workloads = w
	return namespaces
}

// runsIn reports whether a Pod or ReplicaSet in ns owned by owners may be
// one of the app's: owned by one of its workloads there (a ReplicaSet is
// named after its Deployment, "<name>-<hash>", and a Job after its
// CronJob), or in a namespace of its workloads when its owners are
// unknown. Before a pass has found the workloads, any object in allowed
// (the app's namespaces) may be.
func (st *appState) runsIn(ns string, owners, allowed []string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.workloads == nil {
		return slices.Contains(allowed, ns)
	}
	names, ok := st.workloads[ns]
	if !ok {
		return false
	}
	if len(owners) == 0 {
		return true
	}
	for _, o := range owners {
		for _, w := range names {
			if o == w || strings.HasPrefix(o, w+"-") {
				return true
			}
		}
	}
	return false
}

// signal wakes whoever waits on ch, without blocking.
// lookAgain asks the app's loop for a follow-up pass, as an event of its
// Pods does.
func (st *appState) lookAgain() { signal(st.observe) }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sourceVerified reports whether commit is what the app's latest fetch of
// Git returned, with the source reachable since: the condition for acting
// on commit (apply, heal, prune). While Git cannot be fetched or read, it
// is false, and pinbot changes nothing. The pass holds passMu.
func (st *appState) sourceVerified(commit string) bool {
	return st.sourceDown.IsZero() && commit != "" && st.commit == commit
}

// verdict is the state of the last verification a pass made.
func (st *appState) verdict() verdict.Verdict {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lastV == nil {
		return ""
	}
	return verdict.StateOf(st.lastV)
}
