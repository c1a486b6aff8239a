package reconciler

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/ssa"
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
	Heal []Drift `json:"heal,omitempty"`
	// Prune says whether the sync would prune: the app's policy or
	// `pinbot sync --prune`.
	Prune bool `json:"prune"`
	// Orphans are the inventory objects Git no longer declares: with
	// Prune, Delete is deleted; otherwise all are left alone, reported
	// Orphaned.
	Orphans PrunePlan `json:"orphans"`
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
	Object ObjectRef `json:"object"`
	Action string    `json:"action"`
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
	commit, desired, err := r.load(ctx, app, st)
	if err != nil {
		return nil, err
	}
	waves, err := PlanWaves(desired)
	if err != nil {
		return nil, err
	}
	// A direct read, not the watch caches: a dry run is asked for right
	// after a change (a sync, a person's edit) and must show it, and the
	// caches may not have seen it yet. The plan and its heal list share
	// this one read.
	live, err := r.applier.Live(ctx, app.Name, desired)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	plan := &SyncPlan{App: app.Name, Commit: commit, Prune: app.SyncPolicy.Prune || syncOptionsFrom(withSyncOptions(ctx, opts)).prune}
	comes := comesWith(desired)
	for _, w := range waves {
		pw := PlannedWave{Wave: w.Number}
		if w.Phase != PhaseSync {
			pw.Phase = w.Phase.String()
		}
		for _, o := range w.Objects {
			po := PlannedObject{Object: RefOf(o), Action: ActionCreate}
			if isHook(o) && live[po.Object] != nil {
				step, err := hookAction(app.Name, o, live[po.Object], true)
				if err != nil {
					return nil, err
				}
				if step == hookReplace {
					po.Action, po.Note = ActionReplace, "not checked: the hook's previous run is deleted first"
					pw.Objects = append(pw.Objects, po)
					continue
				}
			}
			if l := live[po.Object]; l != nil {
				h, err := ssa.ConfigHash(o)
				if err != nil {
					return nil, err
				}
				po.Action = ActionUnchanged
				if l.GetAnnotations()[AnnotationHash] != h || l.GetLabels()[LabelApp] != app.Name {
					po.Action = ActionUpdate
				}
			}
			po.Error, po.Note = check(ctx, r.applier, app.Name, o, comes)
			pw.Objects = append(pw.Objects, po)
		}
		plan.Waves = append(plan.Waves, pw)
	}
	d, err := r.diff(ctx, app, st, commit, desired, live)
	if err != nil {
		return nil, err
	}
	plan.Heal = d.Drift
	inv, err := r.pruneInventory(ctx, app)
	if err != nil {
		return nil, err
	}
	if plan.Orphans, err = PlanPrune(app, desired, inv); err != nil {
		return nil, err
	}
	return plan, nil
}

// created is what a sync creates that later objects of it may need.
type created struct {
	namespaces map[string]bool
	kinds      map[schema.GroupKind]bool
}

func comesWith(objs []*unstructured.Unstructured) created {
	c := created{namespaces: map[string]bool{}, kinds: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		if ssa.IsNamespace(o) {
			c.namespaces[o.GetName()] = true
		}
	}
	for gk := range declaredScopes(objs) {
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
