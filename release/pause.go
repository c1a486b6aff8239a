package release

import (
	"fmt"
	"time"
)

// Ask is what a person asked of the chain: who, why and since when. A
// pause of the onward promotions into an environment is one: while it
// stands no promotion opens into the environment, its open ones stay
// pending and are never merged by pinbot; rollbacks go on. A rollback
// asked for is another (Ledger.AskRollback).
type Ask struct {
	By  string    `json:"by"`
	Why string    `json:"why"`
	At  time.Time `json:"at"`
}

// PauseBy pauses env, noting who and why; false when it was paused
// already (the first pause stands).
func (l *Ledger) PauseBy(env, who, why string, now time.Time) bool {
	if _, ok := l.Paused[env]; ok {
		return false
	}
	if l.Paused == nil {
		l.Paused = map[string]Ask{}
	}
	l.Paused[env] = Ask{By: who, Why: why, At: now}
	l.LogBy(now, env, "", ReasonChainPaused, fmt.Sprintf("%s paused the promotions into %s: %s", who, env, why), who, why)
	return true
}

// ResumeBy lifts env's pause, noting who and why; false when it was not
// paused.
func (l *Ledger) ResumeBy(env, who, why string, now time.Time) bool {
	p, ok := l.Paused[env]
	if !ok {
		return false
	}
	delete(l.Paused, env)
	l.LogBy(now, env, "", ReasonChainResumed, fmt.Sprintf("%s resumed the promotions into %s, paused by %s since %s: %s", who, env, p.By, stamp(p.At), why), who, why)
	return true
}

// pausedWhy is the gate's description of a paused env.
func pausedWhy(env string, p Ask) string {
	return fmt.Sprintf("promotions into %s are paused by %s: %s", env, p.By, p.Why)
}

// pausedAt is the pause that holds env: its own, or, for a wave, its
// environment's.
func (l *Ledger) pausedAt(env *Environment) (Ask, bool) {
	if p, ok := l.Paused[env.Name]; ok {
		return p, true
	}
	p, ok := l.Paused[env.Of]
	return p, ok && env.Of != ""
}
