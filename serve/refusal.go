package serve

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/chains"
	"pinbot.dev/pinbot/trust"
)

func newPromoteHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pinbot_promote_duration_seconds",
		Help:    "How long serve's promotions took, from the pushed image to the pull request, by kind (push, drift).",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 10),
	}, []string{"kind"})
}

func newRefusalCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_promotions_refused_total",
		Help: "Digests a signature policy refused to promote, by manifest repository and rule.",
	}, []string{"repo", "rule"})
}

// refused posts a signature refusal of a promotion into repo where people
// see it: the log (at Warn, naming the image, digest, rule and reason),
// the refusal counter, and the repository's release ledger, whose events
// every replica's dashboard shows.
func (d *daemon) refused(ctx context.Context, repo string, r *trust.Refusal) {
	d.logRefusal(ctx, repo, r)
	err := d.release.Ledgers().Update(ctx, repo, func(l *release.Ledger) error {
		chains.NoteRefusal(l, d.release.Now(), r)
		return nil
	})
	if err != nil {
		logctx.From(ctx).Warn("recording a refusal in the release ledger", "repo", repo, "error", err.Error())
	}
}

// logRefusal logs and counts a refusal.
func (d *daemon) logRefusal(ctx context.Context, repo string, r *trust.Refusal) {
	logctx.From(ctx).Warn("refused a digest: the signature policy does not pass it", "repo", repo,
		"image", r.Image, "digest", r.Digest, "rule", r.Rule, "reason", r.Reason)
	d.refusals.WithLabelValues(repo, r.Rule).Inc()
}
