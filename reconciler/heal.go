package reconciler

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/ignore"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/ssa"
)

// mayHeal decides whether this pass heals: the app's policy asks for it,
// this is the loop's pass and fetched its commit from a reachable source
// (a follow-up pass reuses the last render and never heals), and the
// commit is the one last synced, so a heal restores what was applied
// rather than syncing a commit nobody approved.
func (p *pass) mayHeal() bool {
	return p.mode == modeLoop && p.app.SyncPolicy.SelfHeal && syncedCommit(p.txn.Current()) == p.o.Commit && p.st.sourceVerified(p.o.Commit)
}

// heal re-applies Git's version of each desired object that drifted
// (fields), is missing from the cluster, or is stale (out of sync: its
// inventory label or config hash changed), unless the drift-war guard
// stopped healing it. Fields under an ignore rule keep their live values.
// It records one history entry with trigger "heal" naming the objects and
// fields, and returns the objects as applied. A transient fault stops it
// unrecorded.
func (p *pass) heal(ctx context.Context, fields []diff.Field) (map[object.Ref]*unstructured.Unstructured, error) {
	byRef := map[object.Ref][]diff.Field{}
	for _, d := range fields {
		byRef[d.Object] = append(byRef[d.Object], d)
	}
	for _, ref := range p.o.OutOfSync {
		if p.live[ref] != nil && byRef[ref] == nil {
			byRef[ref] = []diff.Field{{Object: ref, Path: "metadata", Pointer: "/metadata"}}
		}
	}
	var targets []*unstructured.Unstructured
	var healed []diff.Field
	now := p.r.now()
	for _, o := range p.desired {
		if hook.Is(o) {
			continue // a sync runs hooks; a heal never re-runs one
		}
		ref := object.RefOf(o)
		fs := byRef[ref]
		if p.live[ref] == nil {
			fs = []diff.Field{{Object: ref, LiveAbsent: true}}
		}
		if len(fs) == 0 || !p.st.guard.Allow(fs[0], now, p.app.DriftWar.Limit, time.Duration(p.app.DriftWar.Window)) {
			continue
		}
		targets = append(targets, o)
		healed = append(healed, fs...)
	}
	if len(targets) == 0 {
		return nil, nil
	}
	commit := p.o.Commit
	out := map[object.Ref]*unstructured.Unstructured{}
	e := history.Entry{Commit: commit, Time: now, Trigger: history.TriggerHeal, Result: history.Applied, Healed: healed}
	for _, o := range targets {
		got, err := p.c.Applier.ApplyObject(ctx, p.app.Name, o, keepingIgnored(p.app, p.live[object.RefOf(o)]))
		if err != nil {
			if cluster.Transient(err) {
				return out, err
			}
			e.Result, e.Reason, e.Final = history.Failed, err.Error(), true
			break
		}
		out[object.RefOf(o)] = got
		e.Applied++
	}
	p.log.Info("healed drift", "commit", shortSHA(commit), "objects", e.Applied, "fields", len(healed), "result", e.Result)
	p.r.metrics.CountHeal(p.app.Name)
	p.txn.Change(func(rec *history.Record) bool {
		if l := rec.Latest(); l != nil && l.Commit == commit {
			e.Reported, e.Commented = l.Reported, true // the commit's status and comment stand
			if l.Result == history.Applied && !l.Final {
				l.Final, l.Summary = true, "followed by a heal before it was verified"
			}
		}
		rec.Push(e)
		return true
	})
	if e.Result == history.Applied {
		p.st.awaiting.Store(true) // the heal's rollout is verified like a sync's
		return out, nil
	}
	return out, fmt.Errorf("healing app %s: %s", p.app.Name, e.Reason)
}

// keepingIgnored has a heal's apply set the fields the app's ignore rules
// name to their live values (or leave them out when live lacks them), so
// a heal never touches them.
func keepingIgnored(app *config.App, live *unstructured.Unstructured) ssa.ApplyOption {
	return ssa.Edit(func(s *unstructured.Unstructured) {
		if live != nil {
			ignore.Keep(s.Object, live.Object, app.Ignore, object.RefOf(s))
		}
	})
}
