package serve

import (
	"context"
	"fmt"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/gate"
)

// gateAnswer answers the gate endpoint from the ledgers in the cluster
// (the same on every replica) and, for an app, the reconciler's last
// look.
func (d *daemon) gateAnswer(ctx context.Context, q gate.Query) (gate.Answer, error) {
	if q.App != "" {
		return d.appAnswer(ctx, q)
	}
	for _, t := range d.release.repos() {
		if q.Repo != "" && t.Repo != q.Repo {
			continue
		}
		l, _, err := d.release.ledgers.Get(ctx, t.Repo)
		if err != nil {
			return gate.Answer{}, err
		}
		if l.Envs[q.Env] == nil {
			continue
		}
		q.Repo = t.Repo
		return envAnswer(l, q, d.release.now()), nil
	}
	return gate.Answer{}, fmt.Errorf("%w: environment %q", gate.ErrUnknown, q.Env)
}

// envAnswer is the answer for q from repository's ledger l.
func envAnswer(l *release.Ledger, q gate.Query, now time.Time) gate.Answer {
	a := gate.Answer{Query: q, Hold: l.Held(q.Env, q.Image, q.Digest)}
	t := l.Lookup(q.Env, q.Image)
	if t == nil {
		a.Why = fmt.Sprintf("%s pins no %s", q.Env, q.Image)
		return a
	}
	a.Pinned, a.Proven = t.Pinned, t.Proven
	if t.FrozenUntil != nil && t.FrozenUntil.After(now) {
		a.FrozenUntil = t.FrozenUntil
	}
	switch {
	case t.Proven == q.Digest:
		a.Verified, a.Since, a.Pods = true, t.ProvenSince, t.Pods
	case t.Pinned != q.Digest:
		a.Why = fmt.Sprintf("%s pins %s", q.Env, imageref.Short(t.Pinned))
	default:
		a.Why = t.Why
		a.Pods = t.Pods
	}
	return a
}

// appAnswer answers for an app from its last pass.
func (d *daemon) appAnswer(ctx context.Context, q gate.Query) (gate.Answer, error) {
	if _, err := d.r.Config().App(q.App); err != nil {
		return gate.Answer{}, fmt.Errorf("%w: app %q", gate.ErrUnknown, q.App)
	}
	st, v, err := d.r.Last(q.App)
	if err != nil {
		return gate.Answer{}, err
	}
	a := gate.Answer{Query: q}
	view := appView(q.App, st, v, nil)
	image := q.Image
	if image == "" {
		for _, c := range view.Containers {
			if c.GitDigest == q.Digest {
				image = c.Image
			}
		}
	}
	obs := release.Observe(image, q.Digest, []release.AppView{view})
	a.Verified, a.Why, a.Pods = obs.Proven, obs.Why, obs.Pods
	return a, nil
}
