package chains

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/assess"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/trust/proven"
)

// step is one look at t's repository's chain. It returns the ledger's
// next deadline, zero when none is due.
func (rl *Runner) step(ctx context.Context, repo string) (time.Time, error) {
	log := logctx.From(ctx).With("repo", repo)
	env, err := rl.deps.Env(repo)
	if err != nil {
		return time.Time{}, err
	}
	env.Base = "" // the default branch, read with the fetch
	inv, err := promote.ReadInventory(ctx, env)
	if err != nil {
		return time.Time{}, err
	}
	chain := inv.Config.Environments
	rl.mu.Lock()
	rl.chains[repo] = chain
	rl.keys[repo] = inv.Config.AttestationKeys
	rl.mu.Unlock()
	if len(chain) == 0 {
		return time.Time{}, nil
	}
	rl.warnUnknownApps(ctx, repo, chain)
	l, v, err := rl.read(ctx, repo)
	if errors.Is(err, errRestored) {
		return rl.now(), nil
	} else if err != nil {
		return time.Time{}, err
	}
	l.Chain = chain // for every replica's release page; written only when it changed
	now := rl.now()
	attested := rl.AttestationOf(ctx, repo)
	bypassed, err := Bypassed(ctx, env, l, chain, inv)
	if err != nil {
		return time.Time{}, err
	}
	in := release.Input{Now: now, Chain: chain, Pinned: inv.Pinned, Tags: inv.Tags, Assessed: rl.assess(ctx, chain, inv), Attested: attested, Bypassed: bypassed}
	warnClustersLeft(log, l, in)
	decided := release.Step(l, in)
	todo := append(decided, release.Pending(l, decided)...)
	// The decisions go into the ledger before anything is done: a step
	// whose write meets another's (a leader change, a person's hold
	// release) does nothing, and the next step decides again from what
	// is there. So actions and ledger cannot diverge. A step that
	// decided nothing and has nothing to do writes nothing.
	if len(todo) > 0 || v.Changed(l) {
		if v, err = rl.ledgers.Put(ctx, repo, l, v); errors.Is(err, store.ErrConflict) {
			log.Info("the ledger changed while the step decided; stepping again")
			return now.Add(time.Second), nil
		} else if err != nil {
			return time.Time{}, err
		}
	}
	var records []func(*release.Ledger)
	record := func(r func(*release.Ledger)) {
		r(l)
		records = append(records, r)
	}
	for _, a := range todo {
		if err := rl.act(ctx, env, record, a); err != nil {
			log.Warn("release action failed", "action", string(a.Kind), "env", a.Env, "image", a.Image, "error", redact.String(err.Error()))
		}
	}
	if len(records) > 0 {
		_, err := rl.ledgers.Put(ctx, repo, l, v)
		if errors.Is(err, store.ErrConflict) {
			// Written meanwhile: the outcomes go onto what is there now,
			// never dropped.
			err = rl.ledgers.Update(ctx, repo, func(fresh *release.Ledger) error {
				for _, r := range records {
					r(fresh)
				}
				return nil
			})
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	rl.announce(repo, chain, l)
	rl.countHolds(repo, chain, l)
	if err := rl.gatePulls(ctx, env, l, chain, inv, attested); err != nil && ctx.Err() == nil {
		log.Warn("judging the open pull requests failed", "error", redact.String(err.Error()))
	}
	next, _ := l.NextDeadline(chain, now)
	if opened(todo, l) {
		// A proposal just opened: its gate (pending while the upstream
		// soaks) goes on it now, not at the next tick.
		next = now
	}
	return next, nil
}

// errRestored says read restored a ledger changed outside pinbot.
var errRestored = errors.New("the ledger was restored")

// read reads repo's ledger. One someone who may write ConfigMaps but not
// read the key edited, replaced or deleted goes back to what this
// replica last saw (errRestored), and the next step announces that it
// did. A replica that starts leading announces what it decides from
// then on, not the ledger's history.
func (rl *Runner) read(ctx context.Context, repo string) (*release.Ledger, store.Version, error) {
	l, v, err := rl.ledgers.Get(ctx, repo)
	if te := (*store.TamperedError)(nil); errors.As(err, &te) && te.Restorable {
		logctx.From(ctx).Warn("the ledger was changed outside pinbot; restoring the version this replica last saw", "repo", repo, "why", te.Why)
		if err := rl.ledgers.Restore(ctx, repo, te.Why, rl.now()); err != nil {
			return nil, v, fmt.Errorf("%w; restoring it: %w", te, err)
		}
		return nil, v, errRestored
	}
	if err != nil {
		return nil, v, err
	}
	rl.mu.Lock()
	if _, ok := rl.announced[repo]; !ok {
		var newest time.Time
		if n := len(l.Events); n > 0 {
			newest = l.Events[n-1].At
		}
		rl.announced[repo] = newest
	}
	rl.mu.Unlock()
	return l, v, nil
}

// countHolds sets pinbot_release_holds of repo's environments from l.
func (rl *Runner) countHolds(repo string, chain release.Chain, l *release.Ledger) {
	rl.holds.DeletePartialMatch(prometheus.Labels{"repo": repo})
	for _, e := range chain {
		rl.holds.WithLabelValues(repo, e.Name).Set(0)
	}
	for _, h := range l.Holds {
		rl.holds.WithLabelValues(repo, h.Env).Inc()
	}
}

// EnvsOf are the environments of the chains last read whose apps include
// app.
func (rl *Runner) EnvsOf(app string) []string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var out []string
	for _, c := range rl.chains {
		for _, e := range c {
			if slices.Contains(e.Apps, app) && !slices.Contains(out, e.Name) {
				out = append(out, e.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// opened reports whether one of the actions opened a pull request that
// has no gate posted yet.
func opened(todo []release.Action, l *release.Ledger) bool {
	for _, a := range todo {
		if a.Kind != release.Promote {
			continue
		}
		if t := l.Lookup(a.Env, a.Image); t != nil && t.Proposal != nil && t.Proposal.Digest == a.Digest && t.Proposal.Gate == nil {
			return true
		}
	}
	return false
}

// assess looks at every environment's apps once, and judges each image
// Git pins there.
func (rl *Runner) assess(ctx context.Context, chain release.Chain, inv *promote.Inventory) map[string]map[string]release.Assessment {
	reports := map[string]assess.Report{}
	out := map[string]map[string]release.Assessment{}
	for _, e := range chain {
		if len(e.Apps) == 0 {
			continue
		}
		var vs []assess.Report
		for _, app := range e.Apps {
			v, ok := reports[app]
			if !ok {
				v = rl.deps.Report(ctx, app)
				reports[app] = v
			}
			vs = append(vs, v)
		}
		out[e.Name] = map[string]release.Assessment{}
		for image, digest := range inv.Pinned[e.Name] {
			out[e.Name][image] = assess.OfPlaced(image, digest, vs, e.Placement)
		}
		rl.warnUnknownClusters(ctx, e, vs)
	}
	return out
}

// Chain returns the release chain of repo as last read, and whether one
// is known.
func (rl *Runner) Chain(repo string) (release.Chain, bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	c, ok := rl.chains[repo]
	return c, ok && len(c) > 0
}

// AttestationOf reads, for repo's environments that require one, what
// the upstream's attestations say of a digest (cached for a while).
func (rl *Runner) AttestationOf(ctx context.Context, repo string) release.AttestationOf {
	return func(a release.Admission) *proven.Attested {
		if rl.attested == nil {
			return &proven.Attested{Why: "serve reads no registry: it has no forge: section"}
		}
		rl.mu.Lock()
		keys := rl.keys[repo][a.Env]
		rl.mu.Unlock()
		return rl.attested.Read(ctx, keys, a.Image, a.Digest, a.Upstream)
	}
}

// Admit is serve's own promotion gate, from the ledger: its drift and
// package-event promotions refuse a held digest, and an environment in
// a freeze window. (Onward promotions come from the ledger itself.)
func (rl *Runner) Admit(repo string) promote.Admitter {
	if rl == nil {
		return nil
	}
	return store.Gate{Ledgers: rl.ledgers, Repo: repo, Now: rl.now}
}
