package chains

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/chainmetrics"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/attest"
)

// Runner runs the release chains of serve's repositories (those whose
// .pinbot.yaml declares environments) on the leader: each step it reads
// what Git pins, observes the environments' apps, steps the ledger
// (package release) and carries out what it asks. It takes what it needs
// of the daemon as Deps, and the daemon calls its methods.
type Runner struct {
	deps    Deps
	ledgers *store.Ledgers
	now     func() time.Time

	mu     sync.Mutex
	chains map[string]release.Chain // by repository, as last read
	sched  *Schedule

	// kick wakes run when the proof of an app in a chain changed.
	kick chan struct{}

	// announced is, by repository, the time of the newest ledger event
	// announce wrote as an Event; unset until its first step, which
	// announces nothing older than the ledger it read.
	announced map[string]time.Time

	decisions *prometheus.CounterVec // pinbot_release_decisions_total
	holds     *prometheus.GaugeVec   // pinbot_release_holds
	chainm    *chainmetrics.Metrics
	observe   func(repo string, chain release.Chain, l *release.Ledger, e release.Event, now time.Time) // OnEvent
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

func New(deps Deps) *Runner {
	interval := deps.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	var attested *attest.Reader
	if deps.Registry != nil {
		// Without a forge there are no chains, and nothing to attest.
		attested = attest.NewReader(deps.Registry)
	}
	return &Runner{deps: deps, attested: attested, ledgers: store.New(deps.Kube, deps.Namespace), now: now, chains: map[string]release.Chain{}, sched: NewSchedule(interval), kick: make(chan struct{}, 1),
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

// ProofChanged makes the chains app counts in due now, and wakes run: a
// proof that starts (or breaks) starts (or restarts) its soak now, not at
// the next round.
func (rl *Runner) ProofChanged(app string) {
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
func (rl *Runner) kickRun() {
	select {
	case rl.kick <- struct{}{}:
	default:
	}
}

// Wake makes repo's chain due now, so that what was written into its
// ledger between steps (an attestation's outcome) is announced at once.
func (rl *Runner) Wake(repo string) {
	rl.mu.Lock()
	rl.sched.Wake(repo, rl.now())
	rl.mu.Unlock()
	rl.kickRun()
}

// warnUnknownApps logs, once per repository and set of names, the apps a
// chain names that serve does not run: their environments can prove
// nothing, so nothing moves onward from them.
func (rl *Runner) warnUnknownApps(ctx context.Context, repo string, chain release.Chain) {
	unknown := chain.UnknownApps(rl.deps.Known)
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

// Run steps each chain when it is due (schedule) until ctx ends: when
// its ledger has a deadline due (a soak ending, a readyTimeout passing),
// when the proof of one of its apps changed, and otherwise every
// interval. So the onward pull request or the rollback opens when it is
// due, not up to an interval (or a round of every other chain) later.
func (rl *Runner) Run(ctx context.Context) {
	if rl.deps.Env == nil {
		return
	}
	for {
		names := rl.deps.Repos()
		rl.mu.Lock()
		repo, wait := rl.sched.Next(names, rl.now())
		rl.mu.Unlock()
		if repo != "" {
			now := rl.now()
			next, err := rl.step(ctx, repo)
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
