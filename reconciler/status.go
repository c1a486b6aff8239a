package reconciler

import (
	"encoding/json"
	"time"
)

// AppStatus is what pinbot knows about an app after a pass: sync status
// and health as separate answers, the verification summary, and why the
// last pass stopped, if it did.
type AppStatus struct {
	App    string `json:"app"`
	Repo   string `json:"repo"` // credentials redacted
	Branch string `json:"branch"`
	Path   string `json:"path"`
	// Commit is the head of the branch the pass compared against.
	Commit string `json:"commit,omitempty"`
	// Sync says whether the cluster holds what Commit declares.
	Sync SyncState `json:"sync"`
	// OutOfSync lists the objects that are not as Commit declares:
	// missing, changed in Git since applied, drifted, or orphaned.
	OutOfSync []ObjectRef `json:"out_of_sync,omitempty"`
	// Drift lists each field Git sets whose live value differs (see
	// Reconciler.Diff); fields under the app's ignore rules are left out.
	Drift []Drift `json:"drift,omitempty"`
	// Orphaned are objects of the app's inventory that Commit no longer
	// declares; prune deletes them, else they stay.
	Orphaned []ObjectRef `json:"orphaned,omitempty"`
	// SyncedCommit is the last commit pinbot applied.
	SyncedCommit string `json:"synced_commit,omitempty"`
	// Health aggregates the objects' kstatus.
	Health       Health `json:"health"`
	HealthReason string `json:"health_reason,omitempty"`
	// Verified says every current Pod runs the digests Commit pins;
	// Verification is the one-line summary.
	Verified     bool   `json:"verified"`
	Verification string `json:"verification,omitempty"`
	// Error says why the pass stopped early: source unreachable, render
	// error, forbidden object, failed apply, cluster unreachable.
	Error                  string     `json:"error,omitempty"`
	SourceUnreachableSince *time.Time `json:"source_unreachable_since,omitempty"`
	// ClusterUnreachableSince is set while the Kubernetes API does not
	// answer; the loop backs off and retries.
	ClusterUnreachableSince *time.Time `json:"cluster_unreachable_since,omitempty"`
	Automated               bool       `json:"automated"`
	ObservedAt              time.Time  `json:"observed_at"`
	// Objects are each desired object's health (not persisted).
	Objects []ObjectHealth `json:"objects,omitempty"`
}

// sameAs reports whether s and o say the same thing, ignoring when they
// were observed and the per-object detail; the loop persists a status only
// when it changes.
func (s *AppStatus) sameAs(o *AppStatus) bool {
	if s == nil || o == nil {
		return s == o
	}
	key := func(x AppStatus) string {
		x.ObservedAt, x.Objects = time.Time{}, nil
		b, _ := json.Marshal(x)
		return string(b)
	}
	return key(*s) == key(*o)
}
