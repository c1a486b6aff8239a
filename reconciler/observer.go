package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployed"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/internal/renders"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/settle"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// observer passes the verify-only apps: those that Argo CD or Flux
// deploys (an `argocd:` or `flux:` block in the config). Its pass reads
// the deployer's object (read only), fetches the head of the branch it
// tracks, renders the head at the source path as the deployer would,
// takes the workloads the deployer applied, and verifies their Pods
// against the head's digests, relating them to the digests of the
// revision the deployer deployed (deployer.RelateVerifications). pinbot
// never applies, heals or prunes such an app.
type observer struct {
	r        *Reconciler
	deployed *deployed.Reader // reads Argo CD's and Flux's objects on the local cluster
}

// observed is what a verify-only app's passes keep between them (owned
// by the pass, see appState).
type observed struct {
	// renders are the placed workloads of the head and of the deployed
	// revision, by commit.
	renders renders.Kept
	// head is the head commit last fetched, for follow-up passes.
	head string
	// headVersion is the chart version at head, read only for a
	// HelmRelease whose deployed Git chart's version names no commit.
	headVersion string
}

// ErrVerifyOnly refuses to apply, heal, prune or diff a verify-only app.
var ErrVerifyOnly = errors.New("it is verify-only: pinbot never applies, heals or prunes it")

func verifyOnlyError(app *config.App) error {
	return fmt.Errorf("app %s: %s deploys it; %w", app.Name, app.Deployer().Title(), ErrVerifyOnly)
}

// Following returns the apps, in config order, that follow branch of the
// repository at any of repoURLs (its clone and web URLs): pinbot's own apps by their config, verify-only
// apps by what their deployer's object named at their last pass (one not
// passed yet is left out: its first pass comes at start-up). URLs compare
// by scheme, host (case-insensitive) and path, without a trailing "/" or
// ".git" and without credentials.
func (r *Reconciler) Following(branch string, repoURLs ...string) []string {
	want := map[string]bool{}
	for _, u := range repoURLs {
		if k := gitforge.RepoKey(u); k != "" {
			want[k] = true
		}
	}
	if len(want) == 0 || branch == "" {
		return nil
	}
	var names []string
	set := r.set.Load()
	for i := range set.cfg.Apps {
		a := &set.cfg.Apps[i]
		b, key := a.Branch, set.repoKeys[i]
		if a.VerifyOnly() {
			st := set.states[a.Name]
			st.mu.Lock()
			b, key = st.trackedBranch, st.trackedKey
			st.mu.Unlock()
		}
		if b == branch && want[key] {
			names = append(names, a.Name)
		}
	}
	return names
}

// pass is the pass of a verify-only app. It computes the status and the
// verification in every mode; modeLoop, modeFollow and modeReport also
// record them and report them on the head commit (report).
func (ob *observer) pass(ctx context.Context, p *pass) (*status.App, *verdict.Verification, error) {
	r, st := ob.r, p.st
	if p.mode == modeSync {
		p.o.Err = verifyOnlyError(p.app)
		return status.Of(p.o), nil, p.o.Err
	}
	fail := func(err error) (*status.App, *verdict.Verification, error) {
		p.o.Err = err
		var se *gitsource.Error
		switch {
		case errors.As(err, &se):
			if st.sourceDown.IsZero() {
				st.sourceDown = r.now()
			}
			p.o.SourceDown = st.sourceDown
		case cluster.Transient(err):
			if st.clusterDown.IsZero() {
				st.clusterDown = r.now()
			}
			p.o.ClusterDown = st.clusterDown
		}
		s := status.Of(p.o)
		if p.mode.records() {
			r.persist(ctx, p.app.Name, s)
		}
		return s, nil, err
	}
	p.fresh = p.freshReads()
	d, err := ob.deployed.Read(ctx, p.app, p.fresh)
	if err != nil {
		return fail(err)
	}
	st.clusterDown = time.Time{}
	deployedAs := d.Revision.Commit
	if deployedAs == "" {
		deployedAs = d.Revision.Version
	}
	p.st.owner.Store(d.Owner)
	p.o.Deployed = &status.Deployed{Source: string(d.Source.Kind), Repo: d.Source.RepoURL, Path: d.Path(), Commit: deployedAs}
	p.tracked = d.Tracked(p.app)
	var (
		auth  gitforge.Auth
		head  string
		heads []*unstructured.Unstructured
	)
	if c := d.Source.Chart; c != nil {
		p.o.Deployed.Path = c.Name
		head, heads, err = ob.chartRender(ctx, p, d)
	} else {
		if auth, err = gitAuth(r.Config().Forge, r.token, p.tracked); err != nil {
			return fail(&gitsource.Error{Repo: redact.URL(p.tracked.Repo), Err: err})
		}
		if d.Branch, err = deployed.TrackedBranch(ctx, d.Source, auth); err != nil {
			return fail(err)
		}
		p.tracked.Branch, p.o.Deployed.Branch = d.Branch, d.Branch
		head, heads, err = ob.headRender(ctx, p, d, auth)
	}
	p.o.Commit = head
	if err != nil {
		return fail(err)
	}
	st.sourceDown = time.Time{}
	atHead := d.Revision.AtHead(head)
	if d.Revision.Commit == "" && d.Revision.Version != "" {
		// A HelmRelease of a Git chart, whose version names no commit:
		// Flux deploys a commit when it bumps the chart's version.
		atHead = st.vo.headVersion == d.Revision.Version
	}

	desired := d.Select(heads)
	// The record is read before the Pods are verified: the proof it
	// stores needs no confirming again (trustStoredProof).
	if p.mode.records() {
		if p.txn, err = p.begin(ctx); err != nil {
			return fail(err)
		}
	}
	v, err := ob.verify(ctx, p, d, auth, atHead, desired)
	if err != nil {
		return fail(err)
	}
	h := d.Health.Report()
	p.o.Compared, p.o.Sync = true, status.OutOfSync
	if atHead {
		p.o.Sync = status.Synced
	}
	p.o.Health, p.o.Verification = &h, v
	s := status.Of(p.o)
	if !p.mode.records() {
		return s, v, nil
	}
	ob.report(ctx, p, v, d.Source.Chart == nil)
	p.txn.SetStatus(s)
	st.awaiting.Store(!v.Verified)
	return s, v, p.txn.Commit(ctx)
}

// verify verifies the Pods of desired (the head's workloads that the
// deployer applied) against the head, and, while the deployer is behind,
// against the revision it deployed (deployer.RelateVerifications).
func (ob *observer) verify(ctx context.Context, p *pass, d *deployed.App, auth gitforge.Auth, atHead bool, desired []*unstructured.Unstructured) (*verdict.Verification, error) {
	r, head := ob.r, p.o.Commit
	want := make(map[object.Ref]*unstructured.Unstructured, len(desired))
	nsSet := map[string]bool{}
	for _, o := range desired {
		want[object.RefOf(o)] = o
		nsSet[o.GetNamespace()] = true
	}
	namespaces := make([]string, 0, len(nsSet))
	for ns := range nsSet {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	p.setWorkloads(desired)
	snap, confirm, err := ob.snapshot(ctx, p, d, namespaces, desired, want)
	if err != nil {
		return nil, err
	}
	vHead := r.proveWith(ctx, confirm, p.app.Name, head, snap, p.st.lookAgain)
	if atHead || d.Revision.Commit == "" || d.Revision.Abbreviated() {
		// An abbreviated commit (a HelmRelease of a Git chart) is not
		// fetched: the head alone is proved.
		return deployer.RelateVerifications(d.Source.Kind, head, atHead, vHead, nil), nil
	}
	old, err := ob.deployedRender(ctx, p, d, auth)
	var se *gitsource.Error
	switch {
	case errors.As(err, &se):
		return nil, err
	case err != nil:
		p.log.Warn("rendering the deployed revision", "commit", shortSHA(d.Revision.Commit), "error", err)
		v := deployer.RelateVerifications(d.Source.Kind, head, atHead, vHead, nil)
		v.Reasons = append(v.Reasons, fmt.Sprintf("the deployed revision %s could not be rendered: %s", shortSHA(d.Revision.Commit), err))
		return v, nil
	}
	snapOld := *snap
	snapOld.Desired = slices.DeleteFunc(slices.Clone(old), func(o *unstructured.Unstructured) bool { return want[object.RefOf(o)] == nil })
	return deployer.RelateVerifications(d.Source.Kind, head, atHead, vHead, r.verify(ctx, p.app.Name, d.Revision.Commit, &snapOld)), nil
}

// snapshot reads what verification needs of desired: from the cluster
// the deployer applies to, or, for an Argo CD app read via: api, through
// Argo CD's API server. It returns the confirm that reads the workloads
// again. want is desired by reference.
func (ob *observer) snapshot(ctx context.Context, p *pass, d *deployed.App, namespaces []string, desired []*unstructured.Unstructured, want map[object.Ref]*unstructured.Unstructured) (*verdict.Snapshot, confirmFunc, error) {
	r := ob.r
	if r.Config().ArgoCDVia(p.app) == deployer.ViaAPI {
		api, err := r.argo.API()
		if err != nil {
			return nil, nil, err
		}
		ns, name := p.app.ArgoCD.Object()
		snap, confirm, err := r.argo.Snapshot(ctx, api, name, ns, namespaces, desired, want)
		if err != nil {
			return nil, nil, err
		}
		// pinbot writes no Events where it reads through Argo CD.
		p.snap, p.remote = snap, true
		return snap, confirm, nil
	}
	c, err := r.clusterOf(ctx, p.app, d.Source.Cluster)
	if err != nil {
		return nil, nil, err
	}
	p.on(c)
	if err := c.Answers(ctx); err != nil {
		return nil, nil, err
	}
	live := map[object.Ref]*unstructured.Unstructured{}
	if err := c.Objects.Fill(ctx, c.Applier.Mapping, want, live, p.fresh); err != nil {
		return nil, nil, c.Fault(err)
	}
	snap, err := r.snapshotOn(ctx, c, p.app.Name, namespaces, desired, live)
	if err != nil {
		return nil, nil, c.Fault(err)
	}
	p.snap, p.remote = snap, c != r.local
	return snap, c.Confirm, nil
}

// report records v as the entry of its head commit and, when the source
// is Git (toGit), posts what it means there (settle.Observed), once per
// change of state. A chart of a Helm repository has no commit to post on:
// its entry is the chart's version.
func (ob *observer) report(ctx context.Context, p *pass, v *verdict.Verification, toGit bool) {
	trig := history.TriggerAuto
	if p.mode == modeReport {
		trig = history.TriggerVerify
	}
	now := ob.r.now()
	e := history.Entry{Commit: v.Commit, Time: now, Trigger: trig, Result: history.Observed}
	existing := false
	if l := p.txn.Current().Latest(); l != nil && l.Commit == v.Commit && l.Result == history.Observed {
		e, existing = *l, true
	}
	out := settle.Observed(e, v, now)
	e = out.Entry
	if out.State != "" && toGit {
		p.post(ctx, &e, out.State, out.Desc, "the verification")
	}
	if out.Comment && toGit {
		e.Commented = p.comment(ctx, e.Commit, v)
	}
	if existing {
		p.txn.Replace(e)
	} else {
		p.txn.Add(e)
	}
}

// Report verifies a verify-only app as Status does, records the result and
// reports it on the head commit: the commit status pinbot/<app> pending
// while the deployer is behind, success when verified (with the per-Pod
// proof on the merged promotion pull request), failure on a mismatch.
// What was already posted for the head is not posted again.
func (r *Reconciler) Report(ctx context.Context, name string) (*status.App, *verdict.Verification, error) {
	a, st, err := r.app(name)
	switch {
	case err != nil:
		return nil, nil, err
	case !a.VerifyOnly():
		return nil, nil, fmt.Errorf("app %s: pinbot reports its own apps as it syncs them; --report is for apps Argo CD or Flux deploy", name)
	case r.report == nil:
		return nil, nil, fmt.Errorf("%s: reporting needs the forge section (forge.url)", r.Config().File())
	}
	if err := r.Check(ctx); err != nil {
		return nil, nil, err
	}
	return r.pass(ctx, a, st, modeReport, nil)
}
