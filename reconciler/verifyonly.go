package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/render"
)

// A verify-only app is one that Argo CD or Flux deploys (an `argocd:` or
// `flux:` block in the config). Its pass reads the deployer's object (read
// only), fetches the head of the branch it tracks, renders the head at the
// source path as the deployer would, takes the workloads the deployer
// applied, and verifies their Pods against the head's digests, relating
// them to the digests of the revision the deployer deployed
// (deployer.Relate). pinbot never applies, heals or prunes such an app.

// The deployers' resources pinbot reads.
var (
	applicationsGVR    = schema.GroupVersionResource{Group: deployer.ArgoCDGroup, Version: "v1alpha1", Resource: "applications"}
	kustomizationsGVR  = schema.GroupVersionResource{Group: deployer.KustomizeGroup, Version: "v1", Resource: "kustomizations"}
	gitRepositoriesGVR = schema.GroupVersionResource{Group: deployer.SourceGroup, Version: "v1", Resource: "gitrepositories"}
)

// Observed is the Result of a verify-only app's history entry: pinbot
// applied nothing, it verified what the deployer runs against the head
// commit of the entry.
const Observed Result = "Observed"

// TriggerVerify is the Trigger of an entry `pinbot verify --report` wrote.
const TriggerVerify = "verify"

// ErrVerifyOnly refuses to apply, heal, prune or diff a verify-only app.
var ErrVerifyOnly = errors.New("it is verify-only: pinbot never applies, heals or prunes it")

func verifyOnlyError(app *App) error {
	return fmt.Errorf("app %s: %s deploys it; %w", app.Name, app.Deployer().Title(), ErrVerifyOnly)
}

// verifyOnlyState is what a verify-only app's passes keep between them.
type verifyOnlyState struct {
	// namespaces hold the app's workloads: their Pod events wake the loop.
	namespaces []string
	// renders are the placed workloads of the head and of the deployed
	// revision, by commit.
	renders map[string][]*unstructured.Unstructured
	// head is the head commit last fetched, for follow-up passes.
	head string
	// tracked is the repository and branch the deployer's object named at
	// the last pass, for push webhooks (trackedApps).
	tracked App
}

// watches reports whether a verify-only app's workloads live in ns.
func (st *appState) watches(ns string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Contains(st.vo.namespaces, ns)
}

// trackedApps returns the verify-only apps as the repository and branch
// their deployer's object named at their last pass, so that a push to that
// branch triggers them as it triggers pinbot's own apps (MatchApps). An
// app not passed yet is left out: its first pass comes at start-up.
func (r *Reconciler) trackedApps() []App {
	var out []App
	for i := range r.cfg.Apps {
		a := &r.cfg.Apps[i]
		if !a.VerifyOnly() {
			continue
		}
		st := r.apps[a.Name]
		st.mu.Lock()
		if t := st.vo.tracked; t.Repo != "" {
			out = append(out, t)
		}
		st.mu.Unlock()
	}
	return out
}

// deployedApp is what one read of the deployer's object says.
type deployedApp struct {
	source deployer.Source
	// branch is the branch source.Ref names, resolved.
	branch string
	// revision is what the deployer deployed; zero when nothing yet.
	revision  deployer.Revision
	health    deployer.Health
	workloads []deployer.Ref
}

// describe fills in s what the deployer says: its kind, the repository it
// follows and the commit it deployed.
func (d *deployedApp) describe(s *AppStatus) {
	if d == nil {
		return
	}
	s.Source = string(d.source.Kind)
	s.Repo, s.Branch, s.Path = redact.URL(d.source.RepoURL), d.branch, d.path()
	s.DeployedCommit = d.revision.Commit
	s.Automated = false
}

func (d *deployedApp) path() string {
	if d.source.Path == "" {
		return "."
	}
	return d.source.Path
}

// namespace is where the deployer puts namespaced objects that name none.
func (d *deployedApp) namespace() string {
	if d.source.Namespace == "" {
		return "default"
	}
	return d.source.Namespace
}

// tracked is app as pinbot's Git source and forge reporter see it: the
// repository, branch and path the deployer follows.
func (d *deployedApp) tracked(app *App) *App {
	return &App{
		Name: app.Name, Repo: d.source.RepoURL, Branch: d.branch, Path: d.path(), Namespace: d.namespace(),
		Auth: app.Auth, VerifyTimeout: app.VerifyTimeout, line: app.line,
	}
}

// passVerifyOnly is the pass of a verify-only app. It computes the status
// and the verification in every mode; modeLoop, modeFollow and modeReport
// also record them and report them on the head commit (reportObserved).
func (r *Reconciler) passVerifyOnly(ctx context.Context, app *App, st *appState, mode passMode) (*AppStatus, *Verification, error) {
	o := observation{app: app, at: r.now()}
	if mode == modeSync {
		o.err = verifyOnlyError(app)
		return statusOf(o), nil, o.err
	}
	fail := func(err error) (*AppStatus, *Verification, error) {
		o.err = err
		var se *SourceError
		switch {
		case errors.As(err, &se):
			st.mu.Lock()
			if st.sourceDown.IsZero() {
				st.sourceDown = r.now()
			}
			o.sourceDown = st.sourceDown
			st.mu.Unlock()
		case isTransient(err):
			o.clusterDown = st.clusterDownSince(r.now())
		}
		s := statusOf(o)
		if mode.records() {
			r.persist(ctx, app, s)
		}
		return s, nil, err
	}
	d, err := r.readDeployer(ctx, app)
	if err != nil {
		return fail(err)
	}
	st.clusterUp()
	o.deployed = d
	tracked := d.tracked(app)
	auth, err := r.auth(tracked)
	if err != nil {
		return fail(&SourceError{Repo: redact.URL(tracked.Repo), Err: err})
	}
	if d.branch, err = trackedBranch(ctx, d.source, auth); err != nil {
		return fail(err)
	}
	tracked.Branch = d.branch
	head, heads, err := r.headRender(ctx, tracked, st, d, auth, mode == modeFollow)
	o.commit = head
	if err != nil {
		return fail(err)
	}
	st.mu.Lock()
	st.sourceDown = time.Time{}
	st.mu.Unlock()
	atHead := d.revision.AtHead(head)

	desired := selectWorkloads(heads, d.workloads)
	v, err := r.verifyDeployed(ctx, app, st, d, tracked, auth, head, atHead, desired)
	if err != nil {
		return fail(err)
	}
	h := deployerHealth(d.health)
	o.compared, o.sync = true, OutOfSync
	if atHead {
		o.sync = Synced
	}
	o.health, o.verification = &h, v
	s := statusOf(o)
	if !mode.records() {
		return s, v, nil
	}
	txn, err := r.history.begin(ctx, app.Name)
	if err != nil {
		return s, v, err
	}
	r.reportObserved(ctx, tracked, mode, v, txn)
	txn.setStatus(s)
	st.mu.Lock()
	st.awaiting = !v.Verified
	st.mu.Unlock()
	return s, v, txn.commit(ctx)
}

// readDeployer reads the app's Application, or its Kustomization and
// GitRepository, and what they say.
func (r *Reconciler) readDeployer(ctx context.Context, app *App) (*deployedApp, error) {
	d := &deployedApp{}
	switch {
	case app.ArgoCD != nil:
		ns, name := app.ArgoCD.Object()
		u, err := r.readObject(ctx, applicationsGVR, deployer.ApplicationKind, ns, name)
		if err != nil {
			return nil, err
		}
		a, err := deployer.ApplicationFrom(u)
		if err != nil {
			return nil, err
		}
		if d.source, err = a.Source(); err != nil {
			return nil, err
		}
		if d.revision, err = a.Deployed(d.source); err != nil && !errors.Is(err, deployer.ErrNotDeployed) {
			return nil, err
		}
		d.health, d.workloads = a.Health(), a.Workloads()
	case app.Flux != nil:
		ns, name := app.Flux.Object()
		u, err := r.readObject(ctx, kustomizationsGVR, deployer.KustomizationKind, ns, name)
		if err != nil {
			return nil, err
		}
		k, err := deployer.KustomizationFrom(u)
		if err != nil {
			return nil, err
		}
		rns, rname, err := k.GitRepository()
		if err != nil {
			return nil, err
		}
		ru, err := r.readObject(ctx, gitRepositoriesGVR, deployer.GitRepositoryKind, rns, rname)
		if err != nil {
			return nil, err
		}
		repo, err := deployer.GitRepositoryFrom(ru)
		if err != nil {
			return nil, err
		}
		if d.source, err = k.Source(repo); err != nil {
			return nil, err
		}
		if d.revision, err = k.Deployed(); err != nil && !errors.Is(err, deployer.ErrNotDeployed) {
			return nil, err
		}
		if d.workloads, err = k.Workloads(); err != nil {
			return nil, err
		}
		d.health = k.Health()
	default:
		return nil, fmt.Errorf("app %s names no deployer", app.Name)
	}
	return d, nil
}

// readObject GETs one deployer object. A missing or unreadable one says
// what to check.
func (r *Reconciler) readObject(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string) (*unstructured.Unstructured, error) {
	u, err := r.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s %s/%s (%s) not found: check the name and namespace in the config, and that the CRD is installed", kind, ns, name, gvr.GroupVersion())
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading %s %s/%s: %w (grant pinbot read access with deploy/rbac-deployers.yaml)", kind, ns, name, err)
	case err != nil:
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	return u, nil
}

// trackedBranch resolves what the deployer tracks to a branch: Argo CD's
// HEAD is the remote's default branch, another targetRevision a branch
// name. A tag or a pinned commit has no head to verify against.
func trackedBranch(ctx context.Context, src deployer.Source, auth gitforge.Auth) (string, error) {
	ref := src.Ref
	switch {
	case ref.Branch != "":
		return ref.Branch, nil
	case strings.HasPrefix(ref.Name, "refs/heads/"):
		return strings.TrimPrefix(ref.Name, "refs/heads/"), nil
	case ref.Revision == "HEAD":
		b, err := gitforge.DefaultBranch(ctx, src.RepoURL, auth)
		if err != nil {
			return "", &SourceError{Repo: redact.URL(src.RepoURL), Err: err}
		}
		return b, nil
	case ref.Revision != "":
		return ref.Revision, nil
	}
	return "", fmt.Errorf("%s tracks %s: pinbot follows a branch, and verifies against its head", src.Object, ref)
}

// headRender fetches the head of the tracked branch and renders it, or
// (follow, with a render at hand) reuses the last one.
func (r *Reconciler) headRender(ctx context.Context, tracked *App, st *appState, d *deployedApp, auth gitforge.Auth, follow bool) (string, []*unstructured.Unstructured, error) {
	st.mu.Lock()
	head, cached := st.vo.head, st.vo.renders[st.vo.head]
	st.mu.Unlock()
	if follow && cached != nil {
		return head, cached, nil
	}
	var objs []*unstructured.Unstructured
	err := r.source.With(ctx, tracked, auth, func(rev Revision) error {
		head = rev.Commit
		st.mu.Lock()
		objs = st.vo.renders[head]
		st.mu.Unlock()
		if objs != nil {
			return nil
		}
		var err error
		objs, err = r.renderDeployed(rev.Dir, d)
		return err
	})
	if err != nil {
		return head, nil, err
	}
	st.mu.Lock()
	st.vo.head, st.vo.tracked = head, App{Name: tracked.Name, Repo: tracked.Repo, Branch: tracked.Branch}
	st.vo.renders = keepRenders(st.vo.renders, head, d.revision.Commit)
	st.vo.renders[head] = objs
	st.mu.Unlock()
	return head, objs, nil
}

// deployedRender renders the revision the deployer deployed, from a clone
// that holds the branch's history.
func (r *Reconciler) deployedRender(ctx context.Context, tracked *App, st *appState, d *deployedApp, auth gitforge.Auth) ([]*unstructured.Unstructured, error) {
	commit := d.revision.Commit
	st.mu.Lock()
	objs := st.vo.renders[commit]
	st.mu.Unlock()
	if objs != nil {
		return objs, nil
	}
	err := r.source.withCommit(ctx, tracked, commit, auth, func(rev Revision) error {
		var err error
		objs, err = r.renderDeployed(rev.Dir, d)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	if st.vo.renders == nil {
		st.vo.renders = map[string][]*unstructured.Unstructured{}
	}
	st.vo.renders[commit] = objs
	st.mu.Unlock()
	return objs, nil
}

// keepRenders drops the renders of commits other than head and deployed.
func keepRenders(m map[string][]*unstructured.Unstructured, head, deployed string) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for c, objs := range m {
		if c == head || c == deployed {
			out[c] = objs
		}
	}
	return out
}

// renderDeployed renders the checkout at root as the deployer does: the
// source path, a chart with the Application's Helm settings, namespaced
// objects that name no namespace in the destination namespace. It returns
// the workloads only: the rest is the deployer's business.
func (r *Reconciler) renderDeployed(root string, d *deployedApp) ([]*unstructured.Unstructured, error) {
	rel := d.path()
	var opts []render.Option
	if h := d.source.Helm; h != nil && isChart(filepath.Join(root, filepath.FromSlash(rel))) {
		hr := render.Helm{ReleaseName: h.ReleaseName, Namespace: h.Namespace, Values: h.Values}
		for _, f := range h.ValueFiles {
			if h.IgnoreMissingValueFiles && !fileExists(filepath.Join(root, filepath.FromSlash(rel), filepath.FromSlash(f))) {
				continue
			}
			hr.ValueFiles = append(hr.ValueFiles, f)
		}
		for _, p := range h.Parameters {
			hr.Parameters = append(hr.Parameters, render.Parameter{Name: p.Name, Value: p.Value, ForceString: p.ForceString})
		}
		if hr.Namespace == "" {
			hr.Namespace = d.namespace()
		}
		opts = append(opts, render.WithHelm(hr))
		if h.KubeVersion != "" || len(h.APIVersions) > 0 {
			caps, err := r.caps.get()
			if err != nil {
				return nil, err
			}
			if h.KubeVersion != "" {
				caps.KubeVersion = h.KubeVersion
			}
			if len(h.APIVersions) > 0 {
				caps.APIVersions = h.APIVersions
			}
			opts = append(opts, render.WithCapabilities(caps))
		}
	}
	objs, err := r.render(root, rel, opts...)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if !deployer.IsWorkload(gvk.Group, gvk.Kind) {
			continue
		}
		o = o.DeepCopy()
		if o.GetNamespace() == "" {
			o.SetNamespace(d.namespace())
		}
		out = append(out, o)
	}
	return out, nil
}

func isChart(dir string) bool { return fileExists(filepath.Join(dir, "Chart.yaml")) }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// selectWorkloads keeps the rendered workloads the deployer applied.
func selectWorkloads(objs []*unstructured.Unstructured, applied []deployer.Ref) []*unstructured.Unstructured {
	want := map[ObjectRef]bool{}
	for _, w := range applied {
		want[ObjectRef{Group: w.Group, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if want[RefOf(o)] {
			out = append(out, o)
		}
	}
	return out
}

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

// reportObserved records v as the entry of its head commit and posts what
// it means there (observedReport), once per change of state.
func (r *Reconciler) reportObserved(ctx context.Context, tracked *App, mode passMode, v *Verification, txn *recordTxn) {
	trig := "auto"
	if mode == modeReport {
		trig = TriggerVerify
	}
	e := Entry{Commit: v.Commit, Time: r.now(), Trigger: trig, Result: Observed}
	existing := false
	if l := txn.rec.latest(); l != nil && l.Commit == v.Commit && l.Result == Observed {
		e, existing = *l, true
	}
	se := observedReport(e, v, r.now())
	e = se.entry
	if se.state != "" {
		r.post(ctx, tracked, &e, se.state, se.desc, "the verification")
	}
	if se.comment {
		ok, err := r.report.comment(ctx, tracked, e.Commit, v)
		if err != nil {
			logctx.From(ctx).Warn("commenting the verification", "app", tracked.Name, "error", err)
		}
		e.Commented = ok || err == nil // nothing to comment on counts as done
	}
	if existing {
		txn.replaceLatest(e)
	} else {
		txn.record(e)
	}
}

// observedReport decides, purely, what a verify-only app's verification v
// means for e, the entry of its head commit, at now: success with the
// summary when verified (and, once, the comment on the promotion pull
// request); failure when a container runs neither the head's nor the
// deployed revision's digest; else pending (the deployer is behind, or
// Pods are starting). A state already posted is not posted again, and a
// head once verified is not set back to pending by a Pod restarting.
func observedReport(e Entry, v *Verification, now time.Time) settlement {
	e.Summary = v.Summary()
	s := settlement{}
	mismatch := slices.ContainsFunc(v.Containers, func(c ContainerVerdict) bool { return c.Verdict == Mismatch })
	switch {
	case v.Verified:
		if !e.Verified {
			t := now
			e.VerifiedAt = &t
		}
		e.Verified, e.Digests = true, digestCounts(v)
		s.state, s.desc = stateSuccess, e.Summary
		s.comment = !e.Commented
	case mismatch:
		e.Verified = false
		s.state, s.desc = stateFailure, e.Summary
	default:
		s.state, s.desc = statePending, e.Summary
		if e.Reported == stateSuccess {
			s.state, s.desc = "", ""
		}
	}
	if s.state == e.Reported {
		s.state, s.desc = "", ""
	}
	s.entry = e
	return s
}

// Report verifies a verify-only app as Status does, records the result and
// reports it on the head commit: the commit status pinbot/<app> pending
// while the deployer is behind, success when verified (with the per-Pod
// proof on the merged promotion pull request), failure on a mismatch.
// What was already posted for the head is not posted again.
func (r *Reconciler) Report(ctx context.Context, name string) (*AppStatus, *Verification, error) {
	a, st, err := r.app(name)
	switch {
	case err != nil:
		return nil, nil, err
	case !a.VerifyOnly():
		return nil, nil, fmt.Errorf("app %s: pinbot reports its own apps as it syncs them; --report is for apps Argo CD or Flux deploy", name)
	case r.report == nil:
		return nil, nil, fmt.Errorf("%s: reporting needs the forge section (forge.url)", r.cfg.file)
	}
	if err := r.Check(ctx); err != nil {
		return nil, nil, err
	}
	return r.pass(ctx, a, st, modeReport)
}

// withCommit checks out commit of app's branch, from a clone with the
// branch's history kept next to the shallow one With uses, and calls fn
// with it, holding a lock of its own.
func (s *Source) withCommit(ctx context.Context, app *App, commit string, auth gitforge.Auth, fn func(Revision) error) error {
	lock := s.lock(app.Name + "@history")
	lock.Lock()
	defer lock.Unlock()
	sum := sha256.Sum256([]byte(app.Repo + "\x00" + app.Branch))
	dir := filepath.Join(s.dir, "git-history", app.Name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the clone cache: %w", err)
	}
	if err := gitforge.CheckoutCommit(ctx, app.Repo, app.Branch, commit, dir, auth); err != nil {
		if errors.Is(err, gitforge.ErrCommitNotFound) {
			return err
		}
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	return fn(Revision{Commit: commit, Dir: dir})
}
