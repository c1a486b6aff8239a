package reconciler

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/metrics"
)

// Register registers the Reconciler's metrics with reg
// (metrics.Metrics.Register), and what its caches hold (cluster.Held).
func (r *Reconciler) Register(reg prometheus.Registerer) error {
	return errors.Join(reg.Register(cluster.Held(r.local, r.remotes)), r.metrics.Register(reg))
}

// statuses returns each app's status, in config order: its last pass in
// this process, else (on a follower, which runs no passes) the status the
// leader stored, read at most every 30 s (metrics.Stored); apps with neither are left
// out. With shards, each replica returns only the apps it passed, so
// that each app has one source.
func (r *Reconciler) statuses(ctx context.Context) []metrics.LastPass {
	var out []metrics.LastPass
	set := r.set.Load()
	for i := range set.cfg.Apps {
		name := set.cfg.Apps[i].Name
		if s, v := set.states[name].lastPass(); s != nil {
			out = append(out, metrics.LastPass{Status: *s, Verification: v})
			continue
		}
		if r.replica != "" {
			// Sharded: the replica holding the app's shard reports it.
			// Reading the others' stored statuses would cost a GET per
			// app and scrape, thousands of them.
			continue
		}
		if s := r.stored.Get(ctx, r.history, name); s != nil {
			out = append(out, metrics.LastPass{Status: *s})
		}
	}
	return out
}
