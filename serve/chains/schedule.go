// Package chains is serve's release runner: Runner steps each release
// chain on the leader when it is due (Schedule), carries out what the
// step decides (onward promotions, rollbacks, gates, merges), judges
// every other pull request (Judge, the merge queue, a forged gate
// answered, a bypass seen), and answers the gate endpoint and the
// admission webhook from the ledgers. It takes what it needs of the
// daemon as Deps, and never reaches into it.
package chains

import (
	"time"
)

// Schedule is when each release chain is due for its next step. A chain
// is due for a reason (its ledger's deadline passed, a proof of one of
// its apps changed, a pull request just opened) or for its round (every
// interval). Chains due for a reason go first, earliest first, so that a
// soak ending or a rollback's deadline in one repository never waits for
// the rounds of a thousand others: the cost of a step that matters
// follows what changed, not how many chains there are.
//
// It is not safe for concurrent use; its caller guards it.
type Schedule struct {
	interval time.Duration
	round    map[string]time.Time // the next round, by repository
	deadline map[string]time.Time // the ledger's next deadline
	woken    map[string]time.Time // when a changed proof woke it
}

// NewSchedule returns a Schedule whose rounds come every interval.
func NewSchedule(interval time.Duration) *Schedule {
	return &Schedule{interval: interval, round: map[string]time.Time{}, deadline: map[string]time.Time{}, woken: map[string]time.Time{}}
}

// Next returns the repository among repos to step at now, or "" and how
// long until one is due. A repository seen for the first time is due at
// once; one no longer in repos is forgotten.
func (s *Schedule) Next(repos []string, now time.Time) (string, time.Duration) {
	if len(repos) == 0 {
		clear(s.round)
		clear(s.deadline)
		clear(s.woken)
		return "", s.interval
	}
	known := make(map[string]bool, len(repos))
	for _, r := range repos {
		known[r] = true
		if _, ok := s.round[r]; !ok {
			s.round[r] = now
		}
	}
	for r := range s.round {
		if !known[r] {
			delete(s.round, r)
			delete(s.deadline, r)
			delete(s.woken, r)
		}
	}
	reason, rat := earliest(s.deadline, s.woken)
	if reason != "" && !rat.After(now) {
		return reason, 0
	}
	r, at := earliest(s.round)
	if r != "" && !at.After(now) {
		return r, 0
	}
	if reason != "" && rat.Before(at) {
		at = rat
	}
	return "", at.Sub(now)
}

// Stepped records that a step of repo began at started, and the deadline
// its ledger gave (zero for none). A wake that came while it stepped
// stands: the step may have read the proof before it changed.
func (s *Schedule) Stepped(repo string, started, deadline time.Time) {
	s.round[repo] = started.Add(s.interval)
	delete(s.deadline, repo)
	if !deadline.IsZero() {
		s.deadline[repo] = deadline
	}
	if at, ok := s.woken[repo]; ok && !at.After(started) {
		delete(s.woken, repo)
	}
}

// Wake makes repo due at now: a proof in its chain changed. The latest
// wake is kept, so that a step begun before it does not clear it.
func (s *Schedule) Wake(repo string, now time.Time) { s.woken[repo] = now }

// earliest is the repository due first in ms, by name on a tie so that
// the order is stable.
func earliest(ms ...map[string]time.Time) (string, time.Time) {
	var repo string
	var at time.Time
	for _, m := range ms {
		for r, t := range m {
			if repo == "" || t.Before(at) || (t.Equal(at) && r < repo) {
				repo, at = r, t
			}
		}
	}
	return repo, at
}
