package pr

// Action is what one branch needs, as Plan decides it.
type Action string

// The actions Plan decides between.
const (
	// ActionNone: the base already pins the digests and no pull request
	// is open on the branch.
	ActionNone Action = "none"
	// ActionClose: the base already pins the digests; the branch's open
	// pull request is obsolete.
	ActionClose Action = "close"
	// ActionLeave: the base already pins the digests; the open pull
	// request is not one this run may close (drift leaves promotions).
	ActionLeave Action = "leave"
	// ActionKeep: the open pull request already proposes exactly this, and
	// its text describes its head: nothing to push or edit.
	ActionKeep Action = "keep"
	// ActionPush: push the branch and create or edit its pull request.
	ActionPush Action = "push"
)

// Open is a branch's open pull request as Plan reads it.
type Open struct {
	// Head is the commit the branch points at.
	Head string
	// Meta is its hidden block, nil when unreadable.
	Meta *Meta
	// Mine says that the account pinbot runs as opened it. Anybody who
	// may write to the repository can open a pull request from pinbot's
	// branch, or edit the text of pinbot's, hidden block included: only
	// the author is Gitea's word.
	Mine bool
}

// Plan decides what a branch needs. planned is the promotion rewritten on
// the current base (no Changes when the base already pins its digests);
// open is the branch's open pull request (nil when none); obsolete says
// whether an open pull request may be closed once the base needs no
// change.
//
// A promotion whose digests the base already pins is a no-op; an open pull
// request of pinbot's own that proposes the same pins and whose text
// describes its head commit is kept as it is, so running a promotion twice
// changes nothing. (Keep still wants the caller to check that the head is
// the commit pinbot would push: the text can be edited by others.)
func Plan(planned Meta, open *Open, obsolete func(open *Meta) bool) Action {
	switch {
	case len(planned.Changes) == 0 && open == nil:
		return ActionNone
	case len(planned.Changes) == 0 && obsolete(open.Meta):
		return ActionClose
	case len(planned.Changes) == 0:
		return ActionLeave
	case open != nil && open.Mine && open.Meta != nil && open.Meta.SameProposal(planned) && open.Meta.Head == open.Head:
		return ActionKeep
	}
	return ActionPush
}
