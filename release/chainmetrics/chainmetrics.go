// Package chainmetrics measures the release chains from their ledgers'
// events, as serve announces them, and counts the gate's answers.
package chainmetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
)

// Metrics are how long the release chains take, measured from the
// ledger when its events are announced, and what the gates answered.
type Metrics struct {
	mergeToProof    *prometheus.HistogramVec // pinbot_release_merge_to_proof_seconds
	soak            *prometheus.HistogramVec // pinbot_release_soak_seconds
	upstreamToPull  *prometheus.HistogramVec // pinbot_release_upstream_proof_to_promotion_seconds
	upstreamToProof *prometheus.HistogramVec // pinbot_release_upstream_proof_to_proof_seconds
	Gates           *prometheus.CounterVec   // pinbot_release_gate_statuses_total
	// DORA's four keys, from proof: deployments proven (frequency; the
	// lead time is mergeToProof), deployments that failed, and the time
	// from a failure to its rollback proven.
	deployments *prometheus.CounterVec   // pinbot_release_deployments_total
	failures    *prometheus.CounterVec   // pinbot_release_failed_deployments_total
	restore     *prometheus.HistogramVec // pinbot_release_time_to_restore_seconds
	answers     *prometheus.CounterVec   // pinbot_gate_answers_total
}

// chainBuckets reach from a second (a merge proven at once) to three
// days (a soak over a weekend).
var chainBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400, 259200}

// New returns the metrics, registered nowhere yet (Collectors).
func New() *Metrics {
	h := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: chainBuckets}, []string{"repo", "env"})
	}
	return &Metrics{
		mergeToProof: h("pinbot_release_merge_to_proof_seconds",
			"From a digest's merge into an environment to its proof there (every replica Verified, Ready, healthy), by manifest repository and environment."),
		soak: h("pinbot_release_soak_seconds",
			"From a digest's proof in an environment to its soak completing there, by manifest repository and environment."),
		upstreamToPull: h("pinbot_release_upstream_proof_to_promotion_seconds",
			"From a digest's proof upstream to pinbot's promotion pull request into the environment (the soak included), by manifest repository and environment."),
		upstreamToProof: h("pinbot_release_upstream_proof_to_proof_seconds",
			"From a digest's proof upstream to its proof in the environment: the chain's whole step, by manifest repository and environment."),
		Gates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_release_gate_statuses_total",
			Help: "pinbot/gate commit statuses posted on promotion pull requests, by manifest repository, environment and state (success, pending, failure).",
		}, []string{"repo", "env", "state"}),
		deployments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_release_deployments_total",
			Help: "Deployments proven running: a digest merged into an environment, then proven there, by manifest repository and environment (DORA's deployment frequency; its lead time is pinbot_release_merge_to_proof_seconds).",
		}, []string{"repo", "env"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_release_failed_deployments_total",
			Help: "Deployments that failed: held and rolled back, or reported failing after the rollback window, by manifest repository and environment (DORA's change failure rate is this over pinbot_release_deployments_total).",
		}, []string{"repo", "env"}),
		restore: h("pinbot_release_time_to_restore_seconds",
			"From a deployment's failure to the rollback it opened proven running, by manifest repository and environment (DORA's time to restore)."),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_gate_answers_total",
			Help: "Answers of the gate endpoint, by result: verified, not_verified (the digest is not proven there, or is held), unknown (no such environment or app) or error.",
		}, []string{"result"}),
	}
}

// Collectors are what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	for _, r := range []string{"verified", "not_verified", "unknown", "error"} {
		m.answers.WithLabelValues(r)
	}
	return []prometheus.Collector{m.mergeToProof, m.soak, m.upstreamToPull, m.upstreamToProof, m.Gates, m.answers, m.deployments, m.failures, m.restore}
}

// Observe measures what event e of repo's ledger l ends: a proof ends
// the merge's wait and the chain's step, a soak its soak, a promotion
// the wait after the upstream proof. The ledger is the one the event was
// written into, so its tracks hold the times the event ends.
func (m *Metrics) Observe(repo string, chain release.Chain, l *release.Ledger, e release.Event) {
	t := l.Lookup(e.Env, e.Image)
	if t == nil {
		return
	}
	var up *release.Track
	if env, ok := chain.Get(e.Env); ok && env.From != "" {
		up = l.Lookup(env.From, e.Image)
	}
	// upstream is how long ago digest was proven upstream, if it still is.
	upstream := func(digest string) (time.Duration, bool) {
		if up == nil || up.ProvenSince == nil || digest == "" || up.Proven != digest {
			return 0, false
		}
		return e.At.Sub(*up.ProvenSince), true
	}
	seconds := func(d time.Duration) float64 { return max(d, 0).Seconds() }
	switch e.Reason {
	case release.ReasonProven:
		if deployed, lead, h := l.Deployment(e.Env, e.Image, t.Proven, e.At); deployed {
			m.mergeToProof.WithLabelValues(repo, e.Env).Observe(seconds(lead))
			m.deployments.WithLabelValues(repo, e.Env).Inc()
			if h != nil {
				m.restore.WithLabelValues(repo, e.Env).Observe(seconds(e.At.Sub(h.Since)))
			}
		}
		if d, ok := upstream(t.Proven); ok {
			m.upstreamToProof.WithLabelValues(repo, e.Env).Observe(seconds(d))
		}
	case release.ReasonHeld, release.ReasonReported:
		if release.Failed(e) { // a person's hold is no failed deployment
			m.failures.WithLabelValues(repo, e.Env).Inc()
		}
	case release.ReasonSoaked:
		if t.ProvenSince != nil {
			m.soak.WithLabelValues(repo, e.Env).Observe(seconds(e.At.Sub(*t.ProvenSince)))
		}
	case release.ReasonPromotionOpened:
		if p := t.Proposal; p != nil {
			if d, ok := upstream(p.Digest); ok {
				m.upstreamToPull.WithLabelValues(repo, e.Env).Observe(seconds(d))
			}
		}
	}
}

// Answer wraps the gate endpoint's source, counting its answers.
func (m *Metrics) Answer(src proofapi.Source) proofapi.Source {
	return func(ctx context.Context, q proofapi.Query) (proofapi.Answer, error) {
		a, err := src(ctx, q)
		switch {
		case errors.Is(err, proofapi.ErrUnknown):
			m.answers.WithLabelValues("unknown").Inc()
		case err != nil:
			m.answers.WithLabelValues("error").Inc()
		case a.Verified:
			m.answers.WithLabelValues("verified").Inc()
		default:
			m.answers.WithLabelValues("not_verified").Inc()
		}
		return a, err
	}
}
