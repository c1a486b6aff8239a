package promote

// Phase names a step of a promotion, reported to Env.OnPhase as it is
// reached. Tests kill pinbot at each one to prove that a rerun converges.
type Phase string

// The phases of a promotion, in order.
const (
	// phaseFetched: the base's head is fetched (into the object cache, or
	// memory) and its pins read; nothing is written anywhere yet.
	phaseFetched Phase = "fetched"
	// phaseCommitted: the branch's commit exists in the local object
	// store only.
	phaseCommitted Phase = "committed"
	// phasePushed: the branch is pushed; its pull request is not yet
	// created or edited.
	phasePushed Phase = "pushed"
	// phasePullOpened: a new pull request was created; labels, reviewers
	// and the final check of its text are still to come.
	phasePullOpened Phase = "pull-opened"
)

// reached reports phase p to env.OnPhase, if set.
func (e *Env) reached(p Phase) {
	if e.OnPhase != nil {
		e.OnPhase(p)
	}
}
