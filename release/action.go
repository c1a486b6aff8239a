package release

import (
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
)

// Kind is what an Action asks for.
type Kind string

// The kinds of Action.
const (
	// Promote opens or updates the promotion pull request of Digest into
	// Env, carrying From's Proof.
	Promote Kind = "promote"
	// Gate posts the pinbot/gate status State with Description on PR's
	// Head.
	Gate Kind = "gate"
	// MergePR merges PR (a promotion, or with Rollback a rollback) through
	// the forge's merge API, as far as branch protection lets it.
	MergePR Kind = "merge"
	// Rollback opens the rollback pull request restoring Digest in Env,
	// with the Evidence against Failed.
	Rollback Kind = "rollback"
	// Report says what pinbot saw and did not act on.
	Report Kind = "report"
	// ReadyRollback pushes the branch of the rollback restoring Digest
	// in Env, should Failed (merged, inside its readiness window) fail,
	// and opens no pull request: at the deadline only the pull request
	// is left to open.
	ReadyRollback Kind = "ready-rollback"
	// DropRollback deletes a readied rollback's Branch, still at Head:
	// Failed proved, or the ledger moved on.
	DropRollback Kind = "drop-rollback"
)

// Action is one thing Step asks serve to do.
type Action struct {
	Kind   Kind
	Env    string
	Image  string
	Digest string
	// From and Proof: a Promote's upstream environment and its proof.
	From  string
	Proof *Proof
	// PR and Head: a Gate's or a MergePR's pull request.
	PR   int64
	Head string
	// State and Description: a Gate's status ("success", "failure",
	// "pending").
	State       commitstatus.State
	Description string
	// Failed and Evidence: a Rollback's failed digest and why.
	Failed   string
	Evidence string
	// Tag is the tag a Promote or a Rollback writes with Digest: the one
	// the upstream pins it with, or the one it had when it was proven
	// here; "" keeps the pins' tags.
	Tag string
	// IsRollback: a MergePR of a rollback pull request.
	IsRollback bool
	// At is a Rollback's or ReadyRollback's commit time (Proposal.At).
	At time.Time
	// Branch and Head: a DropRollback's branch, as it was pushed.
	Branch string
	// Group and Members: a Promote, Gate, MergePR or Rollback of a group
	// of images that move as one (Environment.Together). Image and
	// Digest are then the first member's.
	Group   string
	Members []Member
}

// Member is one image of a group's Action: the digest it moves to, with
// its tag, and a Promote's proof or a Rollback's failed digest.
type Member struct {
	Image, Digest, Tag string
	Proof              *Proof
	Failed             string
}

// Proof is the upstream proof a promotion carries to reviewers.
type Proof struct {
	Env    string        `json:"env"`
	Apps   []string      `json:"apps"`
	Image  string        `json:"image"`
	Digest string        `json:"digest"`
	Commit string        `json:"commit,omitempty"`
	Pods   []Pod         `json:"pods"`
	Since  time.Time     `json:"since"`
	Held   time.Duration `json:"held"`
	Soak   time.Duration `json:"soak"`
}

// One constructor per kind of Action: each says what its kind carries.

// promoteAction proposes from's proven digest of image, in t, to env,
// carrying the proof that has held for held.
func promoteAction(env, image string, from Environment, t *Track, held time.Duration) Action {
	return Action{Kind: Promote, Env: env, Image: image, Digest: t.Proven, Tag: t.PinnedTag, From: from.Name, Proof: &Proof{
		Env: from.Name, Apps: from.Apps, Image: image, Digest: t.Proven, Commit: t.Commit, Pods: t.Pods,
		Since: *t.ProvenSince, Held: held, Soak: from.Soak,
	}}
}

// gateAction posts state and description as the gate of proposal p.
func gateAction(env, image string, p *Proposal, state commitstatus.State, description string) Action {
	return Action{Kind: Gate, Env: env, Image: image, PR: p.PR, Head: p.Head, Digest: p.Digest, State: state, Description: description}
}

// mergeAction merges p, a promotion's or (rollback) a rollback's, at the
// head pinbot pushed and judged: a pull request whose head moved since is
// not merged.
func mergeAction(env, image string, p *Proposal, rollback bool) Action {
	return Action{Kind: MergePR, Env: env, Image: image, PR: p.PR, Head: p.Head, Digest: p.Digest, IsRollback: rollback}
}

// rollbackOf is the Rollback action of decision rb in env.
func rollbackOf(env, image string, rb *Proposal) Action {
	return Action{Kind: Rollback, Env: env, Image: image, Digest: rb.Digest, Tag: rb.Tag, Failed: rb.Failed, Evidence: rb.Evidence, At: rb.At}
}

// readyAction readies the rollback to digest to (with tag) of merge m.
func readyAction(env, image, to, tag string, m *Merge) Action {
	return Action{Kind: ReadyRollback, Env: env, Image: image, Digest: to, Tag: tag, Failed: m.Digest, At: m.At}
}

// dropAction deletes readied rollback r's branch, as it was pushed.
func dropAction(env, image string, r *Readied) Action {
	return Action{Kind: DropRollback, Env: env, Image: image, Failed: r.Failed, Branch: r.Branch, Head: r.Head}
}

// reportAction says what pinbot saw of digest of image in env and did not
// act on (all "" for the whole chain).
func reportAction(env, image, digest, evidence string) Action {
	return Action{Kind: Report, Env: env, Image: image, Digest: digest, Evidence: evidence}
}
