// Package history is what pinbot records about each app: its last status
// and its last syncs, newest first (a Record of Entries), as values.
// Package store keeps them in the cluster. Pure.
package history

import (
	"slices"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Limit is how many syncs History keeps per app.
const Limit = 10

// Result is the outcome of one sync.
type Result string

// Sync results.
const (
	// Applied: every object was applied; verification follows.
	Applied Result = "Applied"
	// Failed: an object's apply failed; the entry names it.
	Failed Result = "Failed"
	// Refused: render or guard stopped the sync; nothing was applied.
	Refused Result = "Refused"
	// Observed: a verify-only app's entry. pinbot applied nothing; it
	// verified what the deployer runs against the entry's head commit.
	Observed Result = "Observed"
)

// Triggers of an entry.
const (
	// TriggerAuto: the loop synced or observed.
	TriggerAuto = "auto"
	// TriggerManual: a person ran pinbot sync.
	TriggerManual = "manual"
	// TriggerHeal: pinbot re-applied Git's version of objects that
	// drifted on the cluster.
	TriggerHeal = "heal"
	// TriggerVerify: pinbot verify --report wrote the entry.
	TriggerVerify = "verify"
)

// Entry is one sync of one commit, and what verification later found.
type Entry struct {
	Commit  string    `json:"commit"`
	Time    time.Time `json:"time"`
	Trigger string    `json:"trigger"` // "auto" (the loop), "manual" (pinbot sync) or "heal"
	Result  Result    `json:"result"`
	Reason  string    `json:"reason,omitempty"`
	Applied int       `json:"applied"` // objects applied
	// Desired digests the objects a sync applied, each by its config
	// hash: a later head that renders the same objects needs no sync.
	Desired string         `json:"desired,omitempty"`
	Health  verdict.Health `json:"health,omitempty"`
	// Pruned are the orphans the sync deleted (see prune.Plan).
	Pruned []object.Ref `json:"pruned,omitempty"`
	// Healed are the drifted fields (or missing objects) a self-heal
	// restored; its Trigger is TriggerHeal.
	Healed []diff.Field `json:"healed,omitempty"`
	// Verified and the fields after it are filled in as the rollout
	// proceeds; Final marks the verdict as settled (verified, failed, or
	// timed out).
	Verified   bool          `json:"verified"`
	VerifiedAt *time.Time    `json:"verifiedAt,omitempty"`
	Summary    string        `json:"summary,omitempty"`
	Digests    []DigestCount `json:"digests,omitempty"`
	Final      bool          `json:"final"`
	// Reported is the last Gitea commit status state posted for the
	// entry; Commented says the pull request got its comment.
	Reported  commitstatus.State `json:"reported,omitempty"`
	Commented bool               `json:"commented,omitempty"`
}

// DigestCount is a verified digest and how many Pods run it.
type DigestCount struct {
	Digest string `json:"digest"`
	Pods   int    `json:"pods"`
}

// Record is what pinbot keeps about one app in the cluster: its last
// status and its last Limit syncs, newest first.
type Record struct {
	Status  *status.App `json:"status,omitempty"`
	Entries []Entry     `json:"entries"`
}

// Push puts e first and drops entries beyond Limit.
func (r *Record) Push(e Entry) {
	r.Entries = append([]Entry{e}, r.Entries...)
	if len(r.Entries) > Limit {
		r.Entries = r.Entries[:Limit]
	}
}

// Latest returns the newest entry, or nil.
func (r *Record) Latest() *Entry {
	if len(r.Entries) == 0 {
		return nil
	}
	return &r.Entries[0]
}

// Same reports whether a and b say the same about a sync.
func Same(a, b Entry) bool {
	return a.Commit == b.Commit && a.Time.Equal(b.Time) && a.Trigger == b.Trigger && a.Result == b.Result &&
		a.Reason == b.Reason && a.Applied == b.Applied && a.Health == b.Health &&
		slices.Equal(a.Pruned, b.Pruned) && slices.EqualFunc(a.Healed, b.Healed, diff.Same) &&
		a.Verified == b.Verified && sameTime(a.VerifiedAt, b.VerifiedAt) && a.Summary == b.Summary &&
		slices.Equal(a.Digests, b.Digests) && a.Final == b.Final && a.Reported == b.Reported && a.Commented == b.Commented
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
