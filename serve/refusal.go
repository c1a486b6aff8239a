package serve

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust"
)

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
	logctx.From(ctx).Warn("refused a digest: the signature policy does not pass it", "repo", repo,
		"image", r.Image, "digest", r.Digest, "rule", r.Rule, "reason", r.Reason)
	d.refusals.WithLabelValues(repo, r.Rule).Inc()
	err := d.release.ledgers.Update(ctx, repo, func(l *release.Ledger) error {
		l.Refused(d.release.now(), r.Image, r.Digest, r.Rule+": "+r.Reason)
		return nil
	})
	if err != nil {
		logctx.From(ctx).Warn("recording a refusal in the release ledger", "repo", repo, "error", err.Error())
	}
}
