package reconciler

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/deployer"
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
	// Source is who deploys the app: "pinbot", "argocd" or "flux".
	Source string `json:"source"`
	// DeployedCommit is what the deployer last deployed: the synced commit
	// for pinbot's own apps, Argo CD's last successful sync or Flux's last
	// applied revision for verify-only apps.
	DeployedCommit string `json:"deployed_commit,omitempty"`
	// HeadCommit is the head of the tracked branch, which the Pods are
	// verified against (Commit says the same).
	HeadCommit string `json:"head_commit,omitempty"`
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

// observation is what one pass found out, step by step; statusOf turns it
// into the app's AppStatus. A step the pass did not reach leaves its
// fields zero.
type observation struct {
	app *App
	at  time.Time
	// commit is the head the pass compared against (while the source is
	// unreachable, the last one fetched).
	commit string
	// err is why the pass stopped early, or the diff's error; stage names
	// the step that failed when err does not say it ("reading the
	// cluster", "diffing").
	err   error
	stage string
	// sourceDown is when Git stopped answering, set when the pass stopped
	// at the fetch; clusterDown when the Kubernetes API stopped answering,
	// set when the pass stopped on a transient API error.
	sourceDown  time.Time
	clusterDown time.Time
	// compared says the render was compared with the cluster: sync and
	// outOfSync are Compare's answer (after a heal, if any).
	compared  bool
	sync      SyncState
	outOfSync []ObjectRef
	// drift and orphans are what the diff found (see inspect).
	drift   []Drift
	orphans []ObjectRef
	// syncedCommit is the record's last commit applied in full.
	syncedCommit string
	// health is the health assessed, nil when the pass stopped before;
	// war is the drift-war message, which overrides it.
	health *HealthReport
	war    string
	// verification is the verification computed, nil when the pass
	// stopped before.
	verification *Verification
	// deployed is what a verify-only app's deployer says; nil for
	// pinbot's own apps.
	deployed *deployedApp
}

// statusOf computes the status a pass reports from what it observed.
// Pure, like kstatus's Compute: the same observation gives the same
// status.
func statusOf(o observation) *AppStatus {
	a := o.app
	s := &AppStatus{
		App: a.Name, Repo: redact.URL(a.Repo), Branch: a.Branch, Path: a.Path, Automated: a.SyncPolicy.Automated,
		ObservedAt: o.at, Commit: o.commit, Sync: SyncUnknown, Health: HealthUnknown,
		SyncedCommit: o.syncedCommit, Drift: o.drift, Orphaned: o.orphans,
	}
	s.Source, s.HeadCommit, s.DeployedCommit = string(deployer.Pinbot), o.commit, o.syncedCommit
	o.deployed.describe(s) // a verify-only app's deployer (verifyonly.go)
	if o.compared {
		s.Sync = o.sync
		s.OutOfSync = appendRefs(slices.Clone(o.outOfSync), o.drift, o.orphans)
		if len(s.OutOfSync) > 0 {
			s.Sync = OutOfSync
		}
	}
	if h := o.health; h != nil {
		s.Health, s.HealthReason, s.Objects = h.Health, h.Reason, h.Objects
		if o.war != "" {
			s.Health, s.HealthReason = Degraded, o.war
		}
	}
	if v := o.verification; v != nil {
		s.Verified, s.Verification = v.Verified, v.Summary()
	}
	if o.err == nil {
		return s
	}
	msg := o.err.Error()
	if o.stage != "" {
		msg = o.stage + ": " + msg
	}
	switch {
	case !o.sourceDown.IsZero():
		down := o.sourceDown
		s.SourceUnreachableSince = &down
		msg = fmt.Sprintf("source unreachable since %s: %s", since(down), msg)
	case !o.clusterDown.IsZero():
		down := o.clusterDown
		s.ClusterUnreachableSince = &down
		msg = fmt.Sprintf("kubernetes API unreachable since %s: %s", since(down), msg)
	}
	s.Error = msg
	degradeEmpty(s, o.err) // an empty render is refused and makes the app Degraded
	return s
}
