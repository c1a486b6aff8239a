package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// A verify-only app is one that Argo CD or Flux deploys (an `argocd:` or
// `flux:` block in the config). Its pass reads the deployer's object (read
// only), fetches the head of the branch it tracks, renders the head at the
// source path as the deployer would, takes the workloads the deployer
// applied, and verifies their Pods against the head's digests, relating
// them to the digests of the revision the deployer deployed
// (deployer.Relate). pinbot never applies, heals or prunes such an app.

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
