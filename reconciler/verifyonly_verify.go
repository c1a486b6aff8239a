package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// verifyDeployed verifies the Pods of desired (the head's workloads that
// the deployer applied) against the head, and, while the deployer is
// behind, against the revision it deployed (relateVerifications).
func (r *Reconciler) verifyDeployed(ctx context.Context, app *App, st *appState, d *deployedApp, tracked *App, auth gitforge.Auth,
	head string, atHead bool, desired []*unstructured.Unstructured) (*Verification, error) {
	want := make(map[ObjectRef]*unstructured.Unstructured, len(desired))
	nsSet := map[string]bool{}
	for _, o := range desired {
		want[RefOf(o)] = o
		nsSet[o.GetNamespace()] = true
	}
	namespaces := make([]string, 0, len(nsSet))
	for ns := range nsSet {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	st.mu.Lock()
	st.vo.namespaces = namespaces
	st.mu.Unlock()
	live := map[ObjectRef]*unstructured.Unstructured{}
	if err := r.applier.GetMissing(ctx, want, live); err != nil {
		return nil, err
	}
	if err := r.watcher.Watch(ctx, namespaces); err != nil {
		return nil, err
	}
	snap := &Snapshot{Desired: desired, Live: live}
	r.watcher.Fill(snap, namespaces)
	snap.Lookups = r.lookups.answer(ctx, Needs(snap))
	vHead := Verify(app.Name, head, snap)
	if atHead || d.revision.Commit == "" {
		return relateVerifications(d.source.Kind, head, atHead, vHead, nil), nil
	}
	old, err := r.deployedRender(ctx, tracked, st, d, auth)
	var se *SourceError
	switch {
	case errors.As(err, &se):
		return nil, err
	case err != nil:
		logctx.From(ctx).Warn("rendering the deployed revision", "app", app.Name, "commit", shortSHA(d.revision.Commit), "error", err)
		v := relateVerifications(d.source.Kind, head, atHead, vHead, nil)
		v.Reasons = append(v.Reasons, fmt.Sprintf("the deployed revision %s could not be rendered: %s", shortSHA(d.revision.Commit), err))
		return v, nil
	}
	snapOld := *snap
	snapOld.Desired = selectRefs(old, want)
	snapOld.Lookups = r.lookups.answer(ctx, Needs(&snapOld))
	return relateVerifications(d.source.Kind, head, atHead, vHead, Verify(app.Name, d.revision.Commit, &snapOld)), nil
}

// selectRefs keeps the objects whose refs are in want.
func selectRefs(objs []*unstructured.Unstructured, want map[ObjectRef]*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if want[RefOf(o)] != nil {
			out = append(out, o)
		}
	}
	return out
}

// relateVerifications turns vHead, the Pods verified against the head,
// into a verify-only app's verification. While the deployer is behind the
// head, a container that runs what the deployed revision pins (its verdict
// in vDeployed, nil when unknown) is Pending with the reason
// deployer.Behind gives, and the app is not verified; the first reason
// says so. Pure.
func relateVerifications(kind deployer.Kind, head string, atHead bool, vHead, vDeployed *Verification) *Verification {
	v := *vHead
	v.Containers = slices.Clone(vHead.Containers)
	v.Reasons = slices.Clone(vHead.Reasons)
	type key struct {
		ns, pod, container string
		init               bool
	}
	deployed := map[key]Verdict{}
	if vDeployed != nil {
		for _, c := range vDeployed.Containers {
			deployed[key{c.Namespace, c.Pod, c.Container, c.Init}] = c.Verdict
		}
	}
	verdicts := make([]deployer.Verdict, 0, len(v.Containers))
	for i := range v.Containers {
		c := &v.Containers[i]
		j := deployer.Relate(kind, head, atHead, deployer.Judgement{Verdict: deployer.Verdict(c.Verdict), Reason: c.Reason},
			deployer.Verdict(deployed[key{c.Namespace, c.Pod, c.Container, c.Init}]))
		c.Verdict, c.Reason = Verdict(j.Verdict), j.Reason
		verdicts = append(verdicts, j.Verdict)
	}
	if !atHead {
		v.Reasons = append([]string{deployer.Behind(kind, head)}, v.Reasons...)
	}
	v.Verified = vHead.Verified && deployer.IsVerified(atHead, verdicts)
	return &v
}

// deployerHealth is the app's health as the deployer reports it, Unknown
// while it may not be trusted (deployer.Health).
func deployerHealth(h deployer.Health) HealthReport {
	switch {
	case !h.Counts:
		return HealthReport{Health: HealthUnknown, Reason: h.Reason}
	case h.Healthy:
		return HealthReport{Health: Healthy}
	}
	switch h.Status {
	case "Progressing":
		return HealthReport{Health: Progressing, Reason: h.Reason}
	case "Missing":
		return HealthReport{Health: Missing, Reason: h.Reason}
	case "Degraded", "NotReady":
		return HealthReport{Health: Degraded, Reason: h.Reason}
	}
	return HealthReport{Health: HealthUnknown, Reason: h.Reason}
}
