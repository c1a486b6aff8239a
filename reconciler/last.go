package reconciler

import (
	"context"
	"fmt"

	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/report"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Last returns app's status and verification from the last pass of this
// process (nil before the first), for views such as the dashboard; the
// error is for an unknown app.
func (r *Reconciler) Last(name string) (*status.App, *verdict.Verification, error) {
	_, st, err := r.app(name)
	if err != nil {
		return nil, nil, err
	}
	s, v := st.lastPass()
	return s, v, nil
}

// RunsOn is the cluster app's last pass read its Pods on, for what is
// written beside them (the app's Proof): its name ("" for pinbot's own)
// and dynamic client; false before a pass reached one, or for an app
// read through Argo CD's API, whose cluster pinbot does not reach.
func (r *Reconciler) RunsOn(name string) (string, dynamic.Interface, bool) {
	_, st, err := r.app(name)
	if err != nil {
		return "", nil, false
	}
	c := st.cluster.Load()
	if c == nil {
		return "", nil, false
	}
	return c.Name, c.Dynamic, true
}

// ProofSource says where a proof Proof returned comes from.
type ProofSource string

// Proof sources.
const (
	// ProofLast is the last pass of the app's loop in this process, which
	// its watches keep current: every change to the app's objects, Pods
	// or deployer passes it again.
	ProofLast ProofSource = "last pass"
	// ProofFresh is an observe pass run for the asking: the app's loop
	// runs on another replica (or nowhere), or has not passed yet.
	ProofFresh ProofSource = "fresh"
)

// Proof is app's status and verification, read once for every consumer
// (the release chain, the gate): the last pass of this process's loop of
// the app when there is one, else a fresh observe pass. The source says
// which.
func (r *Reconciler) Proof(ctx context.Context, name string) (*status.App, *verdict.Verification, ProofSource, error) {
	a, st, err := r.app(name)
	if err != nil {
		return nil, nil, "", err
	}
	if s, v := st.lastPass(); s != nil && v != nil {
		return s, v, ProofLast, nil
	}
	s, v, err := r.pass(ctx, a, st, modeObserve, nil)
	return s, v, ProofFresh, err
}

// pullLister is the part of a Forge that lists pull requests
// (*gitforge.Gitea is one).
type pullLister interface {
	ListPulls(ctx context.Context, repo gitforge.Repo, state string) ([]gitforge.Pull, error)
}

// OpenPulls lists the open pinbot promotion pull requests (see
// IsPinbotPull) into app's repository, lowest number first. An app whose
// repository is not on the forge, or a forge that cannot list, has none.
func (r *Reconciler) OpenPulls(ctx context.Context, name string) ([]gitforge.Pull, error) {
	app, _, err := r.app(name)
	if err != nil {
		return nil, err
	}
	if r.report == nil {
		return nil, nil
	}
	lister, ok := r.report.Forge().(pullLister)
	if !ok {
		return nil, nil
	}
	repo, ok := r.report.RepoOf(app.Repo)
	if !ok {
		return nil, nil
	}
	all, err := lister.ListPulls(ctx, repo, gitforge.StateOpen)
	if err != nil {
		return nil, fmt.Errorf("listing the pull requests of %s: %w", repo, err)
	}
	var out []gitforge.Pull
	for i := range all {
		if report.IsPinbotPull(&all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}
