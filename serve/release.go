package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/assess"
	"pinbot.dev/pinbot/release/chainmetrics"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/serve/chains"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
)

// DefaultReleaseInterval is how often serve looks at each release chain:
// the proofs, the soaks, the gates and the merged digests.
const DefaultReleaseInterval = 15 * time.Second

// GateContext is the commit status a promotion pull request's gate posts,
// and every other pull request's too (gatePulls).
const GateContext = release.PullContext

// releaser runs the release chains of the promote entries' repositories
// (those whose .pinbot.yaml declares environments) on the leader: each
// tick it reads what Git pins, observes the environments' apps, steps the
// ledger (package release) and carries out what it asks.
type releaser struct {
	d        *daemon
	ledgers  *store.Ledgers
	interval time.Duration
	now      func() time.Time

	mu     sync.Mutex
	chains map[string]release.Chain // by repository, as last read
	sched  *chains.Schedule

	// kick wakes run when the proof of an app in a chain changed.
	kick chan struct{}

	// announced is, by repository, the time of the newest ledger event
	// announce wrote as an Event; unset until its first step, which
	// announces nothing older than the ledger it read.
	announced map[string]time.Time

	decisions *prometheus.CounterVec // pinbot_release_decisions_total
	holds     *prometheus.GaugeVec   // pinbot_release_holds
	chainm    *chainmetrics.Metrics
	attester  *attester // nil without attest:
	// attested reads upstream attestations for the environments that
	// require them; keys are their attestationKeys, by repository and
	// environment, as last read.
	attested *attest.Reader
	keys     map[string]map[string]*trust.Keys
	// warned are the unknown apps already logged (warnUnknownApps).
	warned map[string]bool
	// pulls are the other pull requests' heads as last read, and the
	// gate posted on them (gatePulls), by "repo#number".
	pulls map[string]*pullSeen
	// forged are the forged pinbot/gate statuses answered, by
	// "repo#number@head author": each is told once (answerForged).
	forged map[string]bool
}

func newReleaser(d *daemon) *releaser {
	interval := d.o.ReleaseInterval
	if interval <= 0 {
		interval = DefaultReleaseInterval
	}
	var attested *attest.Reader
	if d.promote != nil {
		// Without a forge there are no chains, and nothing to attest.
		attested = attest.NewReader(d.promote.reg)
	}
	return &releaser{attested: attested, d: d, ledgers: store.New(d.kube, d.ns), interval: interval, now: time.Now, chains: map[string]release.Chain{}, sched: chains.NewSchedule(interval), kick: make(chan struct{}, 1),
		keys:      map[string]map[string]*trust.Keys{},
		announced: map[string]time.Time{}, chainm: chainmetrics.New(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_release_decisions_total",
			Help: "What the release chains decided, by manifest repository, environment and reason (Proven, Soaked, PromotionOpened, Held, RollbackOpened, ...), counted by the replica that decided.",
		}, []string{"repo", "env", "reason"}),
		holds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pinbot_release_holds",
			Help: "Digests held, by manifest repository and environment, as the leader last stepped the chain.",
		}, []string{"repo", "env"}),
	}
}

// proofChanged makes the chains app counts in due now, and wakes run: a
// proof that starts (or breaks) starts (or restarts) its soak now, not at
// the next round.
func (rl *releaser) proofChanged(app string) {
	rl.mu.Lock()
	counts := false
	for repo, c := range rl.chains {
		if slices.ContainsFunc(c, func(e release.Environment) bool { return slices.Contains(e.Apps, app) }) {
			rl.sched.Wake(repo, rl.now())
			counts = true
		}
	}
	rl.mu.Unlock()
	if counts {
		rl.kickRun()
	}
}

// kickRun wakes run, which steps the chains now due.
func (rl *releaser) kickRun() {
	select {
	case rl.kick <- struct{}{}:
	default:
	}
}

// wake makes repo's chain due now, so that what was written into its
// ledger between steps (an attestation's outcome) is announced at once.
func (rl *releaser) wake(repo string) {
	rl.mu.Lock()
	rl.sched.Wake(repo, rl.now())
	rl.mu.Unlock()
	rl.kickRun()
}

// repos are the promote entries' repositories, each once.
func (rl *releaser) repos() []Target {
	var out []Target
	seen := map[string]bool{}
	for _, t := range rl.d.cfg.Promote {
		if !seen[t.Repo] {
			seen[t.Repo] = true
			out = append(out, t)
		}
	}
	// Every repository an app of serve's lives in (a discovered app's
	// too: where its Application deploys from) may declare a chain,
	// listed under promote: or not.
	if f := rl.d.cfg.Forge; f != nil {
		for _, app := range rl.d.r.Config().Apps {
			for _, url := range append([]string{app.Repo}, app.DeployedFrom...) {
				repo, err := gitforge.RepoOf(f.URL, url)
				if url == "" || err != nil || seen[repo.String()] {
					continue // none, on another forge, or listed already
				}
				seen[repo.String()] = true
				out = append(out, Target{Repo: repo.String()})
			}
		}
	}
	return out
}

// warnUnknownApps logs, once per repository and set of names, the apps a
// chain names that serve does not run: their environments can prove
// nothing, so nothing moves onward from them.
func (rl *releaser) warnUnknownApps(ctx context.Context, repo string, chain release.Chain) {
	cfg := rl.d.r.Config()
	unknown := chain.UnknownApps(func(a string) bool {
		_, err := cfg.App(a)
		return err == nil
	})
	key := repo + " " + strings.Join(unknown, ",")
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(unknown) == 0 || rl.warned[key] {
		return
	}
	if rl.warned == nil {
		rl.warned = map[string]bool{}
	}
	rl.warned[key] = true
	logctx.From(ctx).Warn("the release chain names apps serve does not run: those environments prove nothing, and nothing moves on from them",
		"repo", repo, "apps", unknown)
}

// run steps each chain when it is due (schedule) until ctx ends: when
// its ledger has a deadline due (a soak ending, a readyTimeout passing),
// when the proof of one of its apps changed, and otherwise every
// interval. So the onward pull request or the rollback opens when it is
// due, not up to an interval (or a round of every other chain) later.
func (rl *releaser) run(ctx context.Context) {
	if rl.d.promote == nil {
		return
	}
	for {
		targets := map[string]Target{}
		var names []string
		for _, t := range rl.repos() {
			targets[t.Repo] = t
			names = append(names, t.Repo)
		}
		rl.mu.Lock()
		repo, wait := rl.sched.Next(names, rl.now())
		rl.mu.Unlock()
		if repo != "" {
			now := rl.now()
			next, err := rl.step(ctx, targets[repo])
			if err != nil && ctx.Err() == nil {
				logctx.From(ctx).Warn("release step failed", "repo", repo, "error", redact.String(err.Error()))
			}
			rl.mu.Lock()
			rl.sched.Stepped(repo, now, next)
			rl.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			continue
		}
		timer := time.NewTimer(max(wait, 0) + deadlineSlack)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-rl.kick:
			timer.Stop()
		}
	}
}

// deadlineSlack is how long after a deadline serve steps, so that the
// step sees it passed.
const deadlineSlack = 10 * time.Millisecond

// step is one look at t's repository's chain. It returns the ledger's
// next deadline, zero when none is due.
func (rl *releaser) step(ctx context.Context, t Target) (time.Time, error) {
	log := logctx.From(ctx).With("repo", t.Repo)
	env, err := rl.d.promote.env(&t)
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
	rl.chains[t.Repo] = chain
	rl.keys[t.Repo] = inv.Config.AttestationKeys
	rl.mu.Unlock()
	if len(chain) == 0 {
		return time.Time{}, nil
	}
	rl.warnUnknownApps(ctx, t.Repo, chain)
	l, v, err := rl.ledgers.Get(ctx, t.Repo)
	if te := (*store.TamperedError)(nil); errors.As(err, &te) && te.Restorable {
		// Someone who may write ConfigMaps but not read the key edited,
		// replaced or deleted the ledger: what this replica last saw
		// goes back, and the next step announces that it did.
		log.Warn("the ledger was changed outside pinbot; restoring the version this replica last saw", "why", te.Why)
		if err := rl.ledgers.Restore(ctx, t.Repo, te.Why, rl.now()); err != nil {
			return time.Time{}, fmt.Errorf("%w; restoring it: %w", te, err)
		}
		return rl.now(), nil
	}
	if err != nil {
		return time.Time{}, err
	}
	rl.mu.Lock()
	if _, ok := rl.announced[t.Repo]; !ok {
		// A replica that starts leading announces what it decides, not
		// the ledger's history.
		var newest time.Time
		if n := len(l.Events); n > 0 {
			newest = l.Events[n-1].At
		}
		rl.announced[t.Repo] = newest
	}
	rl.mu.Unlock()
	l.Chain = chain // for every replica's release page; written only when it changed
	now := rl.now()
	attested := rl.attestationOf(ctx, t.Repo)
	bypassed, err := chains.Bypassed(ctx, env, l, chain, inv)
	if err != nil {
		return time.Time{}, err
	}
	in := release.Input{Now: now, Chain: chain, Pinned: inv.Pinned, Tags: inv.Tags, Assessed: rl.assess(ctx, chain, inv), Attested: attested, Bypassed: bypassed}
	decided := release.Step(l, in)
	todo := append(decided, release.Pending(l, decided)...)
	// The decisions go into the ledger before anything is done: a step
	// whose write meets another's (a leader change, a person's hold
	// release) does nothing, and the next step decides again from what
	// is there. So actions and ledger cannot diverge. A step that
	// decided nothing and has nothing to do writes nothing.
	if len(todo) > 0 || v.Changed(l) {
		if v, err = rl.ledgers.Put(ctx, t.Repo, l, v); errors.Is(err, store.ErrConflict) {
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
		_, err := rl.ledgers.Put(ctx, t.Repo, l, v)
		if errors.Is(err, store.ErrConflict) {
			// Written meanwhile: the outcomes go onto what is there now,
			// never dropped.
			err = rl.ledgers.Update(ctx, t.Repo, func(fresh *release.Ledger) error {
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
	rl.announce(t.Repo, chain, l)
	rl.holds.DeletePartialMatch(prometheus.Labels{"repo": t.Repo})
	for _, e := range chain {
		rl.holds.WithLabelValues(t.Repo, e.Name).Set(0)
	}
	for _, h := range l.Holds {
		rl.holds.WithLabelValues(t.Repo, h.Env).Inc()
	}
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

// envsOf are the environments of the chains last read whose apps include
// app.
func (rl *releaser) envsOf(app string) []string {
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
func (rl *releaser) assess(ctx context.Context, chain release.Chain, inv *promote.Inventory) map[string]map[string]release.Assessment {
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
				v = rl.report(ctx, app)
				reports[app] = v
			}
			vs = append(vs, v)
		}
		out[e.Name] = map[string]release.Assessment{}
		for image, digest := range inv.Pinned[e.Name] {
			out[e.Name][image] = assess.Of(image, digest, vs)
		}
	}
	return out
}

// report is the reconciler's proof of app: its loop's last pass here, or a
// fresh observe pass when its loop runs on another replica.
func (rl *releaser) report(ctx context.Context, app string) assess.Report {
	st, v, _, err := rl.d.r.Proof(ctx, app)
	return appReport(app, st, v, err)
}

// appReport converts the reconciler's answer for release.
func appReport(app string, st *status.App, v *verdict.Verification, err error) assess.Report {
	out := assess.Report{App: app, Err: err}
	if err != nil {
		return out
	}
	if st == nil || v == nil {
		out.Err = errors.New("not observed yet")
		return out
	}
	out.Health, out.HealthReason = st.Health, st.HealthReason
	out.Synced = st.Sync == status.Synced
	out.Verified, out.Commit, out.Reasons, out.Containers = v.Verified, v.Commit, v.Reasons, v.Containers
	return out
}

// chain returns the release chain of repo as last read, and whether one
// is known.
func (rl *releaser) chain(repo string) (release.Chain, bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	c, ok := rl.chains[repo]
	return c, ok && len(c) > 0
}

// attestationOf reads, for repo's environments that require one, what
// the upstream's attestations say of a digest (cached for a while).
func (rl *releaser) attestationOf(ctx context.Context, repo string) release.AttestationOf {
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

// admit is serve's own promotion gate, from the ledger: its drift and
// package-event promotions refuse a held digest, and an environment in
// a freeze window. (Onward promotions come from the ledger itself.)
func (rl *releaser) admit(repo string) promote.Admitter {
	if rl == nil {
		return nil
	}
	return store.Gate{Ledgers: rl.ledgers, Repo: repo, Now: rl.now}
}
