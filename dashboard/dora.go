package dashboard

import (
	"fmt"
	"time"

	"pinbot.dev/pinbot/release"
)

// doraFigures are an environment's DORA keys, from proof: the deployments
// proven since the ledger started counting, the mean merge-to-proof
// lead time, the failed share, and the mean time to restore.
type doraFigures struct {
	Since                      Time
	Deployments, Failures      int
	Lead, FailureRate, Restore string
}

// doraOf is env's tally as the page shows it.
func doraOf(t *release.Tally, now time.Time) *doraFigures {
	if t == nil {
		return nil
	}
	v := &doraFigures{Since: at(t.Since, now), Deployments: t.Deployments, Failures: t.Failures, Lead: "-", FailureRate: "-", Restore: "-"}
	if t.Deployments > 0 {
		v.Lead = span(t.Lead / time.Duration(t.Deployments))
		v.FailureRate = fmt.Sprintf("%.0f%%", 100*float64(t.Failures)/float64(t.Deployments))
	}
	if t.Restores > 0 {
		v.Restore = span(t.Restore / time.Duration(t.Restores))
	}
	return v
}
