package release

import (
	"slices"
	"time"
)

// Log records something pinbot did, with its reason (ReasonProven, ...):
// a pull request it opened, for one.
func (l *Ledger) Log(now time.Time, env, image, reason, what string) {
	l.event(now, env, image, reason, what)
}

// LogBy records something person who did, for why: an event, and an
// entry in the audit.
func (l *Ledger) LogBy(now time.Time, env, image, reason, what, who, why string) {
	e := Event{At: now, Env: env, Image: image, What: what, Reason: reason, By: who, Why: why}
	l.record(e)
	l.Audit = append(l.Audit, e)
	if n := len(l.Audit); n > maxAudit {
		l.Audit = slices.Clone(l.Audit[n-maxAudit:])
	}
}

// event records something pinbot decided.
func (l *Ledger) event(now time.Time, env, image, reason, what string) {
	l.record(Event{At: now, Env: env, Image: image, What: what, Reason: reason})
}

// record keeps e among the events and counts it in DORA's tallies.
func (l *Ledger) record(e Event) {
	l.Events = append(l.Events, e)
	if n := len(l.Events); n > maxEvents {
		l.Events = slices.Clone(l.Events[n-maxEvents:])
	}
	l.tally(e)
}
