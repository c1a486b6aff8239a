package release

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/jsonkeys"
)

// Ledger is which digest runs where: for every environment and image,
// what Git pins, what is proven and since when, pinbot's open promotion
// and rollback pull requests, and the digests on hold. serve keeps it in
// the cluster (release/store), so it survives a restart and a failover
// and every replica shows the same.
type Ledger struct {
	// Envs maps environment and image to its track.
	Envs map[string]map[string]*Track `json:"envs"`
	// Holds are digests that failed to prove, refused by promote, drift
	// and the onward promotion until a person releases them.
	Holds []Hold `json:"holds,omitempty"`
	// Events are the latest things pinbot decided, newest last, for
	// people (at most maxEvents).
	Events []Event `json:"events,omitempty"`
	// Stopped says why the chain is stopped: holds on environments
	// .pinbot.yaml no longer declares (renamed or removed). Every
	// admission is refused until a person releases them or the name comes
	// back.
	Stopped string `json:"stopped,omitempty"`
	// Chain is the chain .pinbot.yaml declared when the leader last
	// stepped this ledger: what every replica's release page shows.
	Chain Chain `json:"chain,omitempty"`
	// Paused are the environments a person paused, by name: nothing
	// moves into them onward until resumed (pause.go).
	Paused map[string]Ask `json:"paused,omitempty"`
	// Audit is what people did, newest last, kept
	// apart so pinbot's own decisions never push it out (at most 200).
	Audit []Event `json:"audit,omitempty"`
	// ChainApprovals are the pull requests changing the chain's
	// environments that a person approved, each at one head.
	ChainApprovals []Approval `json:"chainApprovals,omitempty"`
	// DORA are each environment's tallies of DORA's four keys, which
	// outlive the events (dora.go).
	DORA map[string]*Tally `json:"dora,omitempty"`
}

// maxEvents bounds the events a Ledger keeps.
const maxEvents = 50

// maxAudit bounds its audit.
const maxAudit = 200

// Track is one image in one environment.
type Track struct {
	// Pinned is the digest Git pins in the environment's paths, and since
	// when pinbot saw it there.
	Pinned   string    `json:"pinned,omitempty"`
	PinnedAt time.Time `json:"pinnedAt,omitzero"`
	// Proven is Pinned while its proof holds; ProvenSince is when the
	// proof first held without a break since: the soak's start.
	Proven      string     `json:"proven,omitempty"`
	ProvenSince *time.Time `json:"provenSince,omitempty"`
	// SoakedAt is when Proven completed the environment's soak (unset
	// while it soaks, or with no soak).
	SoakedAt *time.Time `json:"soakedAt,omitempty"`
	// Clusters are, for a wave that names its clusters, whether each
	// proves Pinned, since when, or why not.
	Clusters []ClusterProof `json:"clusters,omitempty"`
	// Commit and Pods are the last proof's (or the last look's).
	Commit string `json:"commit,omitempty"`
	Pods   []Pod  `json:"pods,omitempty"`
	// Why says why Pinned is not proven.
	Why string `json:"why,omitempty"`
	// LastProven is the last digest proven here, PrevProven the one
	// before it: what a failed release rolls back to.
	LastProven   string    `json:"lastProven,omitempty"`
	LastProvenAt time.Time `json:"lastProvenAt,omitzero"`
	PrevProven   string    `json:"prevProven,omitempty"`
	// PinnedTag is the tag the pins of Pinned carry ("" for none);
	// LastProvenTag and PrevProvenTag those of LastProven and PrevProven
	// when they were proven. A rollback writes its digest with its own
	// tag, never the failed release's.
	PinnedTag     string `json:"pinnedTag,omitempty"`
	LastProvenTag string `json:"lastProvenTag,omitempty"`
	PrevProvenTag string `json:"prevProvenTag,omitempty"`
	// Merged is the latest change of Pinned, watched for a failed proof.
	Merged *Merge `json:"merged,omitempty"`
	// Proposal is pinbot's open promotion pull request into this
	// environment; Rollback its open rollback pull request.
	Proposal *Proposal `json:"proposal,omitempty"`
	Rollback *Proposal `json:"rollback,omitempty"`
	// RollbackAsked is a person's ask to roll back what Git pins here
	// (AskRollback), until the next step opens it.
	RollbackAsked *Ask `json:"rollbackAsked,omitempty"`
	// Readied is the rollback branch pushed, with no pull request, while
	// Merged was inside its readiness window: should it fail, only the
	// pull request is left to open.
	Readied *Readied `json:"readied,omitempty"`
	// FrozenUntil is set while a freeze window holds the environment.
	FrozenUntil *time.Time `json:"frozenUntil,omitempty"`
}

// Merge is a new digest pinned in an environment, and what its proof did.
type Merge struct {
	Digest string    `json:"digest"`
	At     time.Time `json:"at"`
	// Rollback says it is pinbot's rollback: never rolled back itself.
	Rollback bool `json:"rollback,omitempty"`
	// Proved is set once the digest was proven here.
	Proved bool `json:"proved,omitempty"`
	// FailingSince is when the proof last broke after it had held.
	FailingSince *time.Time `json:"failingSince,omitempty"`
	// Done is set once the rollback window passed or a failure was
	// acted on; Failure says what failed.
	Done    bool   `json:"done,omitempty"`
	Failure string `json:"failure,omitempty"`
	// Bypass says how the digest merged past pinbot's gate: no pull
	// request merged it, or the head merged lacked pinbot's own passing
	// pinbot/gate. Its proof then lifts no hold and is never attested.
	Bypass string `json:"bypass,omitempty"`
}

// Proposal is one open pull request of pinbot's into an environment.
type Proposal struct {
	PR     int64  `json:"pr"`
	Digest string `json:"digest"`
	Head   string `json:"head,omitempty"` // the commit its gate status goes on
	// From is the environment whose proof it carries ("" for CI's).
	From string `json:"from,omitempty"`
	// Gate is the pinbot/gate status last posted on it.
	Gate *PostedGate `json:"gate,omitempty"`
	// Failed is, for a rollback, the digest rolled back from.
	Failed string `json:"failed,omitempty"`
	// Evidence and Tag are, for a rollback decided (PR 0 until its pull
	// request is open), what its pull request says and the tag it writes:
	// the decision is in the ledger before anything is done, so a step cut
	// short (a leader change) is redone, never forgotten.
	Evidence string `json:"evidence,omitempty"`
	Tag      string `json:"tag,omitempty"`
	// At is, for a rollback, its commit's time: the failed digest's
	// merge. The branch readied during the readiness window and the one
	// the rollback pushes are then the same commit (ReadyRollback).
	At time.Time `json:"at,omitzero"`
	// Group names the group of images it moves as one, if any: every
	// member's track holds the same pull request.
	Group string `json:"group,omitempty"`
}

// PostedGate is a pinbot/gate commit status as posted.
type PostedGate struct {
	State       commitstatus.State `json:"state"`
	Description string             `json:"description"`
}

// UnmarshalJSON reads a posted gate, or the "state: description" string
// that older pinbots wrote.
func (g *PostedGate) UnmarshalJSON(data []byte) error {
	var old string
	if json.Unmarshal(data, &old) == nil {
		state, desc, _ := strings.Cut(old, ": ")
		*g = PostedGate{State: commitstatus.State(state), Description: desc}
		return nil
	}
	type plain PostedGate
	return json.Unmarshal(data, (*plain)(g))
}

// Readied is a rollback branch pushed ahead of its need: the merged
// digest it would roll back (Failed), and once pushed, the branch and its
// head.
type Readied struct {
	Failed string `json:"failed"`
	Branch string `json:"branch,omitempty"`
	Head   string `json:"head,omitempty"`
}

// Hold keeps a digest that failed to prove out of an environment.
type Hold struct {
	Env    string    `json:"env"`
	Image  string    `json:"image"`
	Digest string    `json:"digest"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	// From is the environment whose failure put it on hold.
	From string `json:"from"`
	// RolledBackTo is the digest the rollback restores, which does not
	// lift the hold when it is proven.
	RolledBackTo string `json:"rolledBackTo,omitempty"`
	// Known are the digests proven in the environment before the hold,
	// which do not lift it when proven again: only a digest pinned after
	// the hold and proven, or a person (pinbot hold release), does.
	Known []string `json:"known,omitempty"`
}

// Event is one thing pinbot decided, for people.
type Event struct {
	At    time.Time `json:"at"`
	Env   string    `json:"env"`
	Image string    `json:"image"`
	What  string    `json:"what"`
	// Reason names the kind of decision in one CamelCase word, as a
	// Kubernetes Event's reason does (ReasonProven, ReasonHeld, ...).
	Reason string `json:"reason,omitempty"`
	// By and Why are the person who did it and their reason; empty for
	// pinbot's own decisions.
	By  string `json:"by,omitempty"`
	Why string `json:"why,omitempty"`
}

// The reasons of the ledger's events, which serve writes as Kubernetes
// Events on the objects of the environment's apps.
const (
	ReasonProven          = "Proven"
	ReasonProofBroke      = "ProofBroke"
	ReasonMerged          = "Merged"
	ReasonSoaked          = "Soaked"
	ReasonPromotionOpened = "PromotionOpened"
	ReasonHeld            = "Held"
	ReasonHoldLifted      = "HoldLifted"
	ReasonRollbackOpened  = "RollbackOpened"
	ReasonReported        = "Reported"
	ReasonRefused         = "Refused"
	ReasonChainStopped    = "ChainStopped"
	ReasonFreezeStarted   = "FreezeStarted"
	ReasonFreezeEnded     = "FreezeEnded"
	// ReasonGateBypassed: a digest merged into an environment past
	// pinbot's gate (Merge.Bypass).
	ReasonGateBypassed = "GateBypassed"
	// ReasonAttested and ReasonAttestationFailed say whether serve
	// attached the signed "proven running" attestation of a proof.
	ReasonAttested          = "Attested"
	ReasonAttestationFailed = "AttestationFailed"

	// ReasonLedgerRestored: the ledger was changed outside pinbot (its
	// seal broke, or an older one was put back), and pinbot wrote back
	// the version it last read or wrote (package store).
	ReasonLedgerRestored = "LedgerRestored"
	// ReasonLedgerResealed: a person who may read the ledger's key
	// accepted the ledger as it stood after it was changed outside
	// pinbot (pinbot ledger reseal).
	ReasonLedgerResealed = "LedgerResealed"
	// ReasonChainPaused and ReasonChainResumed: a person paused the
	// onward promotions into an environment, or resumed them.
	ReasonChainPaused  = "ChainPaused"
	ReasonChainResumed = "ChainResumed"
	// ReasonRollbackAsked: a person asked to roll an environment back.
	ReasonRollbackAsked = "RollbackAsked"
	// ReasonChainApproved: a person approved a pull request's change of
	// the chain's environments.
	ReasonChainApproved = "ChainChangeApproved"
)

// Warning says whether an event of reason is bad news: a Kubernetes
// Event of type Warning rather than Normal.
func Warning(reason string) bool {
	switch reason {
	case ReasonProofBroke, ReasonHeld, ReasonRollbackOpened, ReasonReported, ReasonRefused, ReasonChainStopped, ReasonAttestationFailed,
		ReasonGateBypassed, ReasonLedgerRestored, ReasonLedgerResealed, ReasonChainPaused, ReasonRollbackAsked:
		return true
	}
	return false
}

// New returns an empty ledger.
func New() *Ledger { return &Ledger{Envs: map[string]map[string]*Track{}} }

// Parse reads a ledger written by Marshal.
func Parse(data []byte) (*Ledger, error) {
	l := New()
	if len(data) == 0 {
		return l, nil
	}
	if err := jsonkeys.Unmarshal(data, l); err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	if l.Envs == nil {
		l.Envs = map[string]map[string]*Track{}
	}
	return l, nil
}

// Marshal writes the ledger as JSON.
func (l *Ledger) Marshal() ([]byte, error) { return json.Marshal(l) }

// Track returns the track of image in env, made when missing.
func (l *Ledger) Track(env, image string) *Track {
	if l.Envs[env] == nil {
		l.Envs[env] = map[string]*Track{}
	}
	t := l.Envs[env][image]
	if t == nil {
		t = &Track{}
		l.Envs[env][image] = t
	}
	return t
}

// Lookup returns the track of image in env, or nil.
func (l *Ledger) Lookup(env, image string) *Track { return l.Envs[env][image] }

// Images lists the images the ledger tracks in env, sorted.
func (l *Ledger) Images(env string) []string {
	var out []string
	for im := range l.Envs[env] {
		out = append(out, im)
	}
	sort.Strings(out)
	return out
}

// frozen says whether a freeze window held env at the last step.
func (l *Ledger) frozen(env string) bool {
	for _, t := range l.Envs[env] {
		if t.FrozenUntil != nil {
			return true
		}
	}
	return false
}

// Held returns the hold on digest of image in env, or nil.
func (l *Ledger) Held(env, image, digest string) *Hold {
	for i := range l.Holds {
		h := &l.Holds[i]
		if h.Env == env && h.Image == image && h.Digest == digest {
			return h
		}
	}
	return nil
}

// hold puts digest of image on hold in each environment of envs.
func (l *Ledger) hold(envs []string, h Hold) {
	for _, env := range envs {
		if l.Held(env, h.Image, h.Digest) != nil {
			continue
		}
		h.Env = env
		l.Holds = append(l.Holds, h)
	}
}

// Release lifts the hold on digest of image in env and in the
// environments the same failure held it in below env, and reports
// whether there was one. One failure's holds are placed at once, in the
// chain's order (hold), so the ledger alone says which are below env:
// neither the chain nor a rename of it since is needed.
func (l *Ledger) Release(env, image, digest string) bool {
	h := l.Held(env, image, digest)
	if h == nil {
		return false
	}
	from, below := h.From, false
	l.Holds = slices.DeleteFunc(l.Holds, func(x Hold) bool {
		same := x.Image == image && x.Digest == digest && x.From == from
		below = below || (same && x.Env == env)
		return same && below
	})
	return true
}

// ReleaseBy is Release by a person: who released the hold and why go into
// the ledger's events.
func (l *Ledger) ReleaseBy(env, image, digest, who, why string, now time.Time) bool {
	if !l.Release(env, image, digest) {
		return false
	}
	l.LogBy(now, env, image, ReasonHoldLifted, fmt.Sprintf("%s released the hold on %s: %s", who, imageref.Short(digest), why), who, why)
	return true
}

// Refused records that the signature policy refused digest of image
// (what says which rule and why), once: a refusal repeated by every
// drift run is one event.
func (l *Ledger) Refused(now time.Time, image, digest, what string) {
	what = "refused " + digest + ": " + what
	for _, e := range l.Events {
		if e.Image == image && e.What == what {
			return
		}
	}
	l.event(now, "", image, ReasonRefused, what)
}

// Proposed records pinbot's open promotion pull request into env.
func (l *Ledger) Proposed(env, image string, p Proposal) { l.Track(env, image).Proposal = &p }

// RollbackOpened records pinbot's open rollback pull request in env.
func (l *Ledger) RollbackOpened(env, image string, p Proposal) { l.Track(env, image).Rollback = &p }

// RollbackReadied records the rollback branch pushed for failed in env,
// unless the ledger moved on meanwhile.
func (l *Ledger) RollbackReadied(env, image, failed, branch, head string) {
	if t := l.Lookup(env, image); t != nil && t.Readied != nil && t.Readied.Failed == failed {
		t.Readied.Branch, t.Readied.Head = branch, head
	}
}

// Posted records the gate status posted on pull request pr of env: its
// promotion or its rollback.
func (l *Ledger) Posted(env, image string, pr int64, state commitstatus.State, description string) {
	t := l.Lookup(env, image)
	if t == nil {
		return
	}
	for _, p := range []*Proposal{t.Proposal, t.Rollback} {
		if p != nil && p.PR == pr {
			p.Gate = &PostedGate{State: state, Description: description}
		}
	}
}

// Closed forgets pinbot's pull request number in env (merged or closed
// elsewhere), so the next step proposes again if it should.
func (l *Ledger) Closed(env, image string, number int64) {
	t := l.Lookup(env, image)
	if t == nil {
		return
	}
	if t.Proposal != nil && t.Proposal.PR == number {
		t.Proposal = nil
	}
	if t.Rollback != nil && t.Rollback.PR == number {
		t.Rollback = nil
	}
}

// Soaked says how long the proof of env's image has held, and whether
// that is the soak env asks.
func (t *Track) Soaked(now time.Time, soak time.Duration) (time.Duration, bool) {
	if t == nil || t.Proven == "" || t.ProvenSince == nil {
		return 0, false
	}
	held := now.Sub(*t.ProvenSince)
	return held, held >= soak
}

// Bypassed says whether the digest pinned in the track merged past
// pinbot's gate (Merge.Bypass).
func (t *Track) Bypassed() bool {
	return t != nil && t.Merged != nil && t.Merged.Digest == t.Pinned && t.Merged.Bypass != ""
}

// NextDeadline is the earliest time after now at which Step would decide
// something that nothing else announces: a soak ending, a merged digest's
// readyTimeout passing, a freeze ending. ok is false when none is due.
// serve steps then, instead of at its next tick.
func (l *Ledger) NextDeadline(chain Chain, now time.Time) (next time.Time, ok bool) {
	due := func(t time.Time) {
		if t.After(now) && (!ok || t.Before(next)) {
			next, ok = t, true
		}
	}
	for _, env := range chain {
		for _, t := range l.Envs[env.Name] {
			if t.ProvenSince != nil && t.Proven != "" {
				due(t.ProvenSince.Add(env.Soak))
			}
			if m := t.Merged; m != nil && !m.Done && !m.Proved {
				due(m.At.Add(env.ReadyTimeout))
				if t.Readied == nil && !m.Rollback {
					due(readyAt(m, env))
				}
			}
			if m := t.Merged; m != nil && !m.Done && m.FailingSince != nil {
				due(m.FailingSince.Add(env.ReadyTimeout))
			}
			if t.FrozenUntil != nil {
				due(*t.FrozenUntil)
			}
		}
	}
	return next, ok
}
