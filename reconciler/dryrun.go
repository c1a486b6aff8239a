package reconciler

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/prune"
	"pinbot.dev/pinbot/reconciler/ssa"
	"pinbot.dev/pinbot/reconciler/wave"
)

// SyncPlan is what a sync of an app's current commit would do, wave by
// wave, and what it would heal and prune: `pinbot sync --dry-run`.
// Computing it changes nothing.
type SyncPlan struct {
	App    string `json:"app"`
	Commit string `json:"commit"`
	// Waves are the objects a sync applies, in order.
	Waves []PlannedWave `json:"waves"`
	// Heal are the fields Git sets that someone changed on the cluster
	// (see Reconciler.Diff; the app's ignore rules apply): a sync restores
	// them.
	Heal []diff.Field `json:"heal,omitempty"`
	// Prune says whether the sync would prune: the app's policy or
	// `pinbot sync --prune`.
	Prune bool `json:"prune"`
	// Orphans are the inventory objects Git no longer declares: with
	// Prune, Delete is deleted; otherwise all are left alone, reported
	// Orphaned.
	Orphans prune.Orphans `json:"orphans"`
}

// PlannedWave is one wave of a SyncPlan.
type PlannedWave struct {
	// Phase is "PreSync" or "PostSync" for a wave of hooks, else empty.
	Phase   string          `json:"phase,omitempty"`
	Wave    int             `json:"wave"`
	Objects []PlannedObject `json:"objects"`
}

// Actions of a PlannedObject.
const (
	ActionCreate    = "create"    // not in the cluster
	ActionUpdate    = "update"    // Git changed it since pinbot applied it
	ActionUnchanged = "unchanged" // as pinbot last applied it
	// ActionReplace: a run-once hook (Job, Pod) that Git changed, deleted
	// and then created again.
	ActionReplace = "replace"
)

// PlannedObject is one object a sync would apply.
type PlannedObject struct {
	Object object.Ref `json:"object"`
	Action string     `json:"action"`
	// Error is the API server's refusal of the object in a server-side
	// apply dry run: the sync would stop there.
	Error string `json:"error,omitempty"`
	// Note says why the dry run could not check the object: its Namespace
	// or CRD comes with the same sync.
	Note string `json:"note,omitempty"`
}

// Failed reports whether the API server refused any object of the plan.
func (p *SyncPlan) Failed() bool {
	for _, w := range p.Waves {
		for _, o := range w.Objects {
			if o.Error != "" {
				return true
			}
		}
	}
	return false
}

// DryRun computes what Sync would do with app's current commit: it
// fetches and renders Git once, with the same guards (a refusal is the
// same error), plans the waves, asks the API server for a server-side
// apply dry run of each object, lists the drift the sync would heal (as
// Diff does, on the same render and cluster read), and plans the prune
// (opts: SyncPrune). It applies, records and reports nothing.
func (r *Reconciler) DryRun(ctx context.Context, name string, opts ...SyncOption) (*SyncPlan, error) {
	app, st, err := r.app(name)
	if err != nil {
		return nil, err
	}
	st.passMu.Lock()
	defer st.passMu.Unlock()
	so := syncOptionsOf(opts)
	p := r.newPass(ctx, app, st, modeObserve, &so)
	if err := p.reach(ctx); err != nil {
		return nil, err
	}
	if err := p.load(ctx); err != nil {
		return nil, err
	}
	waves, err := wave.Plan(p.desired)
	if err != nil {
		return nil, err
	}
	// A direct read, not the watch caches: a dry run is asked for right
	// after a change (a sync, a person's edit) and must show it, and the
	// caches may not have seen it yet. The plan and its heal list share
	// this one read.
	if p.live, err = p.c.Applier.Live(ctx, app.Name, p.desired); err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	plan := &SyncPlan{App: app.Name, Commit: p.o.Commit, Prune: app.SyncPolicy.Prune || so.prune}
	comes := comesWith(p.desired)
	for _, w := range waves {
		pw := PlannedWave{Wave: w.Number}
		if w.Phase != hook.Sync {
			pw.Phase = w.Phase.String()
		}
		for _, o := range w.Objects {
			po, err := p.planObject(ctx, o, comes)
			if err != nil {
				return nil, err
			}
			pw.Objects = append(pw.Objects, po)
		}
		plan.Waves = append(plan.Waves, pw)
	}
	d, err := p.diff(ctx)
	if err != nil {
		return nil, err
	}
	plan.Heal = d.Fields
	inv, err := p.c.Applier.InventoryIn(ctx, app.Name, app.AllowNamespaces)
	if err != nil {
		return nil, err
	}
	if plan.Orphans, err = prune.Plan(app, p.desired, inv); err != nil {
		return nil, err
	}
	return plan, nil
}

// planObject is what a sync would do with o.
func (p *pass) planObject(ctx context.Context, o *unstructured.Unstructured, comes created) (PlannedObject, error) {
	po := PlannedObject{Object: object.RefOf(o), Action: ActionCreate}
	l := p.live[po.Object]
	if l == nil {
		po.Error, po.Note = check(ctx, p.c.Applier, p.app.Name, o, comes)
		return po, nil
	}
	if hook.Is(o) {
		step, err := hook.Action(p.app.Name, o, l, true)
		if err != nil {
			return po, err
		}
		if step == hook.Replace {
			po.Action, po.Note = ActionReplace, "not checked: the hook's previous run is deleted first"
			return po, nil
		}
	}
	same, err := object.AsApplied(p.app.Name, o, l)
	if err != nil {
		return po, err
	}
	po.Action = ActionUnchanged
	if !same {
		po.Action = ActionUpdate
	}
	po.Error, po.Note = check(ctx, p.c.Applier, p.app.Name, o, comes)
	return po, nil
}

// created is what a sync creates that later objects of it may need.
type created struct {
	namespaces map[string]bool
	kinds      map[schema.GroupKind]bool
}

func comesWith(objs []*unstructured.Unstructured) created {
	c := created{namespaces: map[string]bool{}, kinds: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		if object.IsNamespace(o) {
			c.namespaces[o.GetName()] = true
		}
	}
	for gk := range guard.DeclaredScopes(objs) {
		c.kinds[gk] = true
	}
	return c
}

// check asks the API server for a server-side apply dry run of o for app.
// It returns the server's refusal, or a note when o cannot be checked yet
// because its Namespace or CRD comes with the same sync.
func check(ctx context.Context, a *ssa.Applier, app string, o *unstructured.Unstructured, comes created) (refusal, note string) {
	if comes.kinds[o.GroupVersionKind().GroupKind()] {
		return "", "not checked: its CRD is applied by the same sync"
	}
	_, err := a.ApplyObject(ctx, app, o, ssa.DryRun())
	var ae *ssa.ApplyError
	switch {
	case err == nil:
		return "", ""
	case apierrors.IsNotFound(err) && comes.namespaces[o.GetNamespace()]:
		return "", "not checked: its Namespace is created by the same sync"
	case errors.As(err, &ae):
		return ae.Err.Error(), "" // the API server's words; the plan names the object
	}
	return err.Error(), ""
}
