// Package heal guards self-heal against drift wars: another controller
// that keeps changing a field Git sets would otherwise be fought forever.
// Pure: the caller passes the time.
package heal

import (
	"fmt"
	"time"

	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
)

// Guard is self-heal's drift-war guard: it counts the heals of each
// object in a sliding window and, when an object drifts again once its
// limit is spent, stops healing it and says why. The caller passes the
// time. Its zero value is ready to use; it is not safe for concurrent use.
type Guard struct {
	heals map[object.Ref][]time.Time
	wars  map[object.Ref]string
}

// Allow records a heal of d's object at now and reports whether it may
// happen: an object healed limit times within window is at war, and is not
// healed again until it is found clean (Settle) or Git changes it (Reset).
func (g *Guard) Allow(d diff.Field, now time.Time, limit int, window time.Duration) bool {
	if g.heals == nil {
		g.heals, g.wars = map[object.Ref][]time.Time{}, map[object.Ref]string{}
	}
	ref := d.Object
	if g.wars[ref] != "" {
		return false
	}
	var kept []time.Time
	for _, t := range g.heals[ref] {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	if len(kept) >= limit {
		g.heals[ref] = kept
		g.wars[ref] = warMessage(d, limit, window)
		return false
	}
	g.heals[ref] = append(kept, now)
	return true
}

// Settle ends ref's war: it was found clean.
func (g *Guard) Settle(ref object.Ref) { delete(g.wars, ref) }

// Reset forgets ref: Git changed it.
func (g *Guard) Reset(ref object.Ref) {
	delete(g.wars, ref)
	delete(g.heals, ref)
}

// AtWar reports whether ref's healing stopped.
func (g *Guard) AtWar(ref object.Ref) bool { return g.wars[ref] != "" }

// War returns the message of the first object at war, or "".
func (g *Guard) War() string {
	refs := make([]object.Ref, 0, len(g.wars))
	for ref := range g.wars {
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return ""
	}
	object.Sort(refs)
	msg := g.wars[refs[0]]
	if n := len(refs) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more objects at war)", n)
	}
	return msg
}

// warMessage tells a person what is happening and the one-line fix.
func warMessage(d diff.Field, limit int, window time.Duration) string {
	obj := d.Object.Kind + "/" + d.Object.Name
	if d.Object.Group != "" {
		obj = d.Object.Group + "/" + obj
	}
	field := d.Path
	if field == "" {
		field = "(the whole object)"
	}
	return fmt.Sprintf("drift war on %s field %s: another controller keeps changing it (healed %d times within %s; "+
		"add an ignore rule {object: %s, pointers: [%s]} or change Git)", d.Object, field, limit, window, obj, d.Pointer)
}
