package reconciler

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/ssa"
)

// TriggerHeal is the history trigger of a self-heal: pinbot re-applied
// Git's version of objects that drifted on the cluster.
const TriggerHeal = "heal"

// warGuard is self-heal's drift-war guard: it counts the heals of each
// object in a sliding window and, when an object drifts again once its
// limit is spent, stops healing it and says why. Pure: the caller passes
// the time.
type warGuard struct {
	heals map[ObjectRef][]time.Time
	wars  map[ObjectRef]string
}

// allow records a heal of d's object at now and reports whether it may
// happen: an object healed limit times within window is at war, and is not
// healed again until it is found clean (settle) or Git changes it (reset).
func (g *warGuard) allow(d Drift, now time.Time, limit int, window time.Duration) bool {
	if g.heals == nil {
		g.heals, g.wars = map[ObjectRef][]time.Time{}, map[ObjectRef]string{}
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

// settle ends ref's war: it was found clean.
func (g *warGuard) settle(ref ObjectRef) { delete(g.wars, ref) }

// reset forgets ref: Git changed it.
func (g *warGuard) reset(ref ObjectRef) {
	delete(g.wars, ref)
	delete(g.heals, ref)
}

// atWar reports whether ref's healing stopped.
func (g *warGuard) atWar(ref ObjectRef) bool { return g.wars[ref] != "" }

// war returns the message of the first object at war, or "".
func (g *warGuard) war() string {
	refs := make([]ObjectRef, 0, len(g.wars))
	for ref := range g.wars {
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return ""
	}
	sortRefs(refs)
	msg := g.wars[refs[0]]
	if n := len(refs) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more objects at war)", n)
	}
	return msg
}

// warMessage tells a person what is happening and the one-line fix.
func warMessage(d Drift, limit int, window time.Duration) string {
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

// mayHeal decides whether this pass heals: the app's policy asks for it,
// this is the loop's pass and fetched commit from a reachable source (a
// follow-up pass reuses the last render and never heals), and commit is
// the one last synced, so a heal restores what was applied rather than
// syncing a commit nobody approved.
func (r *Reconciler) mayHeal(app *App, st *appState, mode passMode, rec *Record, commit string) bool {
	return mode == modeLoop && app.SyncPolicy.SelfHeal && syncedCommit(rec) == commit && st.sourceVerified(commit)
}

// heal re-applies Git's version of each desired object that drifted
// (drift), is missing from live, or is stale (its inventory label or
// config hash changed), unless the drift-war guard stopped healing it.
// Fields under an ignore rule keep their live values. It records one
// history entry with trigger "heal" naming the objects and fields, and
// returns the objects as applied. A transient fault stops it unrecorded.
func (r *Reconciler) heal(ctx context.Context, app *App, st *appState, txn *recordTxn, commit string, desired []*unstructured.Unstructured,
	live map[ObjectRef]*unstructured.Unstructured, drift []Drift, stale []ObjectRef) (map[ObjectRef]*unstructured.Unstructured, error) {
	byRef := map[ObjectRef][]Drift{}
	for _, d := range drift {
		byRef[d.Object] = append(byRef[d.Object], d)
	}
	for _, ref := range stale {
		if live[ref] != nil && byRef[ref] == nil {
			byRef[ref] = []Drift{{Object: ref, Path: "metadata", Pointer: "/metadata"}}
		}
	}
	var targets []*unstructured.Unstructured
	var healed []Drift
	now := r.now()
	st.mu.Lock()
	for _, o := range desired {
		if isHook(o) {
			continue // a sync runs hooks; a heal never re-runs one
		}
		ref := RefOf(o)
		fields := byRef[ref]
		if live[ref] == nil {
			fields = []Drift{{Object: ref, LiveAbsent: true}}
		}
		if len(fields) == 0 || !st.guard.allow(fields[0], now, app.DriftWar.Limit, time.Duration(app.DriftWar.Window)) {
			continue
		}
		targets = append(targets, o)
		healed = append(healed, fields...)
	}
	st.mu.Unlock()
	if len(targets) == 0 {
		return nil, nil
	}
	log := logctx.From(ctx).With("app", app.Name, "commit", shortSHA(commit))
	out := map[ObjectRef]*unstructured.Unstructured{}
	e := Entry{Commit: commit, Time: now, Trigger: TriggerHeal, Result: Applied, Healed: healed}
	for _, o := range targets {
		got, err := r.applier.ApplyObject(ctx, app.Name, o, keepingIgnored(app, live[RefOf(o)]))
		if err != nil {
			if isTransient(err) {
				return out, err
			}
			e.Result, e.Reason, e.Final = Failed, err.Error(), true
			break
		}
		out[RefOf(o)] = got
		e.Applied++
	}
	log.Info("healed drift", "objects", e.Applied, "fields", len(healed), "result", e.Result)
	r.metrics.countHeal(app.Name)
	txn.change(func(rec *Record) bool {
		if l := rec.latest(); l != nil && l.Commit == commit {
			e.Reported, e.Commented = l.Reported, true // the commit's status and comment stand
			if l.Result == Applied && !l.Final {
				l.Final, l.Summary = true, "followed by a heal before it was verified"
			}
		}
		rec.add(e)
		return true
	})
	if e.Result == Applied {
		st.mu.Lock()
		st.awaiting = true // the heal's rollout is verified like a sync's
		st.mu.Unlock()
		return out, nil
	}
	return out, fmt.Errorf("healing app %s: %s", app.Name, e.Reason)
}

// keepingIgnored has a heal's apply set the fields the app's ignore rules
// name to their live values (or leave them out when live lacks them), so
// a heal never touches them.
func keepingIgnored(app *App, live *unstructured.Unstructured) ssa.ApplyOption {
	return ssa.Edit(func(s *unstructured.Unstructured) {
		if live != nil {
			keepIgnored(s.Object, live.Object, app.Ignore, RefOf(s))
		}
	})
}

// keepIgnored sets, in obj (what pinbot is about to apply for ref), every
// field an ignore rule names to its value in live, or removes it where
// live has none. Pure.
func keepIgnored(obj, live map[string]any, rules []IgnoreRule, ref ObjectRef) {
	for _, r := range rules {
		if !r.matchesObject(ref) {
			continue
		}
		for _, p := range r.Pointers {
			if p == "" || p == "/" {
				continue
			}
			var segs []string
			for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
				segs = append(segs, strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~"))
			}
			keepAt(obj, live, segs)
		}
	}
}

// keepAt walks segs through obj (a map or list) and live side by side;
// "*" visits every key or index of obj.
func keepAt(obj, live any, segs []string) {
	keys := func() []string {
		if segs[0] != "*" {
			return []string{segs[0]}
		}
		var ks []string
		switch o := obj.(type) {
		case map[string]any:
			for k := range o {
				ks = append(ks, k)
			}
			sort.Strings(ks)
		case []any:
			for i := range o {
				ks = append(ks, strconv.Itoa(i))
			}
		}
		return ks
	}()
	for _, k := range keys {
		switch o := obj.(type) {
		case map[string]any:
			lm, _ := live.(map[string]any)
			lv, lok := lm[k]
			if len(segs) == 1 {
				if lok {
					o[k] = copyJSON(lv)
				} else {
					delete(o, k)
				}
				continue
			}
			if child, ok := o[k]; ok {
				keepAt(child, lv, segs[1:])
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(o) {
				continue
			}
			ll, _ := live.([]any)
			var lv any
			lok := i < len(ll)
			if lok {
				lv = ll[i]
			}
			if len(segs) == 1 {
				if lok {
					o[i] = copyJSON(lv)
				}
				continue
			}
			keepAt(o[i], lv, segs[1:])
		}
	}
}

// copyJSON deep-copies a decoded JSON value.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = copyJSON(e)
		}
		return l
	}
	return v
}
