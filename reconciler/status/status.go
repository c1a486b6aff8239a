// Package status computes what pinbot reports about an app after a pass,
// from what the pass observed, as kstatus computes an object's status:
// sync state and health as separate answers, the verification summary,
// and why the pass stopped, if it did. Pure.
package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// SyncState answers "does the cluster hold what Git declares?".
type SyncState string

// MaxPods bounds the containers a status keeps (App.Pods), so that it
// fits its ConfigMap whatever the app's size; the summary counts them all.
const MaxPods = 100

// Sync states.
const (
	Synced    SyncState = "Synced"
	OutOfSync SyncState = "OutOfSync"
	// SyncUnknown: the comparison could not be made (source unreachable,
	// render failed, cluster unreachable).
	SyncUnknown SyncState = "Unknown"
)

// App is what pinbot knows about an app after a pass: sync status and
// health as separate answers, the verification summary, and why the last
// pass stopped, if it did.
type App struct {
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
	OutOfSync []object.Ref `json:"outOfSync,omitempty"`
	// Drift lists each field Git sets whose live value differs (see
	// diff.Fields); fields under the app's ignore rules are left out.
	Drift []diff.Field `json:"fields,omitempty"`
	// Orphaned are objects of the app's inventory that Commit no longer
	// declares; prune deletes them, else they stay.
	Orphaned []object.Ref `json:"orphaned,omitempty"`
	// SyncedCommit is the last commit pinbot applied.
	SyncedCommit string `json:"syncedCommit,omitempty"`
	// Health aggregates the objects' kstatus.
	Health       verdict.Health `json:"health"`
	HealthReason string         `json:"healthReason,omitempty"`
	// Verified says every current Pod runs the digests Commit pins;
	// Verification is the one-line summary.
	Verified     bool   `json:"verified"`
	Verification string `json:"verification,omitempty"`
	// Proof is the verification's state: Verified, Mismatch,
	// Inconclusive, Unknown, or Pending before any.
	Proof verdict.Verdict `json:"proof,omitempty"`
	// Error says why the pass stopped early: source unreachable, render
	// error, forbidden object, failed apply, cluster unreachable.
	Error                  string     `json:"error,omitempty"`
	SourceUnreachableSince *time.Time `json:"sourceUnreachableSince,omitempty"`
	// ClusterUnreachableSince is set while the Kubernetes API does not
	// answer; the loop backs off and retries.
	ClusterUnreachableSince *time.Time `json:"clusterUnreachableSince,omitempty"`
	Automated               bool       `json:"automated"`
	ObservedAt              time.Time  `json:"observedAt"`
	// Pods are the proof of each container of each current Pod, at most
	// MaxPods of them: what every replica's dashboard shows, since only
	// the leader verifies.
	Pods []verdict.ContainerVerdict `json:"pods,omitempty"`
	// OldPods are the containers of Pods of other revisions still there
	// (a rollout under way, or stuck with the old Pods serving), at most
	// MaxPods of them; never failures.
	OldPods []verdict.ContainerVerdict `json:"oldPods,omitempty"`
	// Cluster names the cluster the app runs on: "" for pinbot's own, a
	// spoke's name, or its server.
	Cluster string `json:"cluster,omitempty"`
	// ClusterLabels are the labels of the Secret that reaches Cluster:
	// what a release wave's selector picks it by.
	ClusterLabels map[string]string `json:"clusterLabels,omitempty"`
	// Objects are each desired object's health (not persisted).
	Objects []verdict.ObjectHealth `json:"objects,omitempty"`
	// Source is who deploys the app: "pinbot", "argocd" or "flux".
	Source string `json:"source"`
	// DeployedCommit is what the deployer last deployed: the synced commit
	// for pinbot's own apps, Argo CD's last successful sync or Flux's last
	// applied revision for verify-only apps.
	DeployedCommit string `json:"deployedCommit,omitempty"`
	// HeadCommit is the head of the tracked branch, which the Pods are
	// verified against (Commit says the same).
	HeadCommit string `json:"headCommit,omitempty"`
	// Replica is the replica of serve whose pass this is (its --id), when
	// serve runs sharded. A stored status names the replica that stored
	// it: the last whose pass changed it.
	Replica string `json:"replica,omitempty"`
}

// SameAs reports whether s and o say the same thing, ignoring when they
// were observed, by which replica, and the per-object detail; the loop
// persists a status only when it changes. A replica taking over a dead
// one's apps thus rewrites none of those it finds as they were.
func (s *App) SameAs(o *App) bool {
	if s == nil || o == nil {
		return s == o
	}
	key := func(x App) string {
		x.ObservedAt, x.Objects, x.Replica = time.Time{}, nil, ""
		b, _ := json.Marshal(x)
		return string(b)
	}
	return key(*s) == key(*o)
}

// Observation is what one pass found out, step by step; Of turns it into
// the app's status. A step the pass did not reach leaves its fields zero.
type Observation struct {
	App *config.App
	At  time.Time
	// Replica names the replica of serve that passes the app, if any.
	Replica string
	// Cluster names the cluster the pass read ("" for pinbot's own),
	// and ClusterLabels its Secret's labels.
	Cluster       string
	ClusterLabels map[string]string
	// Commit is the head the pass compared against (while the source is
	// unreachable, the last one fetched).
	Commit string
	// Err is why the pass stopped early, or the diff's error; Stage names
	// the step that failed when Err does not say it ("reading the
	// cluster", "diffing").
	Err   error
	Stage string
	// SourceDown is when Git stopped answering, set when the pass stopped
	// at the fetch; ClusterDown when the Kubernetes API stopped answering,
	// set when the pass stopped on a transient API error.
	SourceDown  time.Time
	ClusterDown time.Time
	// Compared says the render was compared with the cluster: Sync and
	// OutOfSync are diff.Compare's answer (after a heal, if any).
	Compared  bool
	Sync      SyncState
	OutOfSync []object.Ref
	// Drift and Orphans are what the diff found.
	Drift   []diff.Field
	Orphans []object.Ref
	// SyncedCommit is the record's last commit applied in full.
	SyncedCommit string
	// Health is the health assessed, nil when the pass stopped before;
	// War is the drift-war message, which overrides it.
	Health *verdict.HealthReport
	War    string
	// Verification is the verification computed, nil when the pass
	// stopped before.
	Verification *verdict.Verification
	// Deployed is what a verify-only app's deployer says; nil for
	// pinbot's own apps.
	Deployed *Deployed
}

// Deployed is what Argo CD's or Flux's object says about a verify-only
// app: who deploys it, what it follows and what it deployed.
type Deployed struct {
	Source string // "argocd" or "flux"
	Repo   string
	Branch string
	Path   string
	Commit string // "" when nothing is deployed yet
}

// Of computes the status a pass reports from what it observed: the same
// observation gives the same status.
func Of(o Observation) *App {
	a := o.App
	s := &App{
		App: a.Name, Repo: redact.URL(a.Repo), Branch: a.Branch, Path: a.Path, Automated: a.SyncPolicy.Automated,
		ObservedAt: o.At, Commit: o.Commit, Sync: SyncUnknown, Health: verdict.HealthUnknown,
		SyncedCommit: o.SyncedCommit, Drift: o.Drift, Orphaned: o.Orphans, Replica: o.Replica, Cluster: o.Cluster, ClusterLabels: o.ClusterLabels,
	}
	s.Source, s.HeadCommit, s.DeployedCommit = string(deployer.Pinbot), o.Commit, o.SyncedCommit
	if d := o.Deployed; d != nil {
		s.Source, s.Repo, s.Branch, s.Path = d.Source, redact.URL(d.Repo), d.Branch, d.Path
		s.DeployedCommit, s.Automated = d.Commit, false
	}
	if o.Compared {
		s.Sync = o.Sync
		s.OutOfSync = appendRefs(slices.Clone(o.OutOfSync), o.Drift, o.Orphans)
		if len(s.OutOfSync) > 0 {
			s.Sync = OutOfSync
		}
	}
	if h := o.Health; h != nil {
		s.Health, s.HealthReason, s.Objects = h.Health, h.Reason, h.Objects
		if o.War != "" {
			s.Health, s.HealthReason = verdict.Degraded, o.War
		}
	}
	s.Proof = verdict.StateOf(o.Verification)
	if v := o.Verification; v != nil {
		s.Verified, s.Verification = v.Verified, v.Summary()
		s.Pods = v.Containers[:min(len(v.Containers), MaxPods)]
		s.OldPods = v.OldRevisions[:min(len(v.OldRevisions), MaxPods)]
	}
	if o.Err == nil {
		return s
	}
	msg := o.Err.Error()
	if o.Stage != "" {
		msg = o.Stage + ": " + msg
	}
	switch {
	case !o.SourceDown.IsZero():
		down := o.SourceDown
		s.SourceUnreachableSince = &down
		msg = fmt.Sprintf("source unreachable since %s: %s", since(down), msg)
	case !o.ClusterDown.IsZero():
		down := o.ClusterDown
		s.ClusterUnreachableSince = &down
		// Nothing can be proven of a cluster that does not answer: not
		// Pending (which waits for a rollout), Unknown.
		s.Proof = verdict.Unknown
		msg = fmt.Sprintf("kubernetes API unreachable since %s: %s", since(down), msg)
	}
	s.Error = msg
	degradeEmpty(s, o.Err) // an empty render is refused and makes the app Degraded
	return s
}

// appendRefs adds the objects of drift and orphans to refs, once each.
func appendRefs(refs []object.Ref, drift []diff.Field, orphans []object.Ref) []object.Ref {
	seen := map[object.Ref]bool{}
	for _, r := range refs {
		seen[r] = true
	}
	add := func(r object.Ref) {
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	for _, d := range drift {
		add(d.Object)
	}
	for _, o := range orphans {
		add(o)
	}
	return refs
}

// since formats t, when a peer stopped answering, for the "source
// unreachable since <t>" and "kubernetes API unreachable since <t>"
// reasons: a moment (RFC 3339, UTC) rather than a duration, so the reason,
// and the status that carries it, stay the same while the outage lasts.
func since(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// degradeEmpty marks s Degraded when err refused an empty render (with
// allowEmpty off): the app's objects stay as they are, but Git now says
// to delete them all, which a person must look at. The refusal is the
// reason. Other errors leave s alone.
func degradeEmpty(s *App, err error) {
	if errors.Is(err, guard.ErrEmpty) {
		s.Health, s.HealthReason = verdict.Degraded, err.Error()
	}
}

// WithoutObjects is s without the per-object detail, as it is persisted.
func WithoutObjects(s *App) *App {
	c := *s
	c.Objects = nil
	return &c
}
