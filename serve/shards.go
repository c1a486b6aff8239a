package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/serve/shard"
)

// sharded reports whether the replicas split the apps among them
// (Options.Shards) rather than the leader passing them all.
func (d *daemon) sharded() bool { return d.o.Elect && d.o.Shards > 0 }

// passesHere reports whether this replica passes app now: it holds the
// app's shard or, unsharded, leads.
func (d *daemon) passesHere(app string) bool {
	if d.sharded() {
		return d.shards.Owns(d.r.ShardKey(app))
	}
	return d.leads()
}

// newShards sets up this replica's part in the shards: it passes the apps
// of the shards it holds, each through the reconcile loops, until the
// shard is given up (its passes end first) or lost (its passes are cut).
func (d *daemon) newShards(ctx context.Context) (*shard.Manager, error) {
	n := d.o.Shards
	work := func(wctx context.Context, stop <-chan struct{}, k int) {
		err := d.r.RunSome(wctx, stop, func(a *config.App) bool { return shard.Of(a.ShardKey(), n) == k })
		if err != nil && wctx.Err() == nil {
			logctx.From(ctx).Error("the reconcile loops of a shard stopped", "shard", k, "error", err.Error())
		}
	}
	return shard.New(d.kube, shard.Options{
		Shards: n, ID: d.o.Lease.ID, Namespace: d.ns,
		Duration: d.o.Lease.Duration, RenewDeadline: d.o.Lease.RenewDeadline, RetryPeriod: d.o.Lease.RetryPeriod,
	}, work, logctx.From(ctx))
}

// runShards starts this replica's part in the shards, and the watch of
// the trigger ConfigMap through which other replicas forward the passes
// of apps this one holds.
func (d *daemon) runShards(work context.Context) error {
	trigger := func(app string) {
		if d.passesHere(app) {
			_ = d.r.Trigger(app)
		}
	}
	if err := watchTriggers(work, d.kube, d.ns, triggerHandlers{app: trigger, push: func(p pushRequest) { go d.triggerPushed(work, p) }}); err != nil {
		return err
	}
	ctx, cut := context.WithCancel(work)
	stop := make(chan struct{})
	var once sync.Once
	d.cutShards, d.stopShards = cut, func() { once.Do(func() { close(stop) }) }
	d.shardsDone = make(chan struct{})
	go func() { defer close(d.shardsDone); d.shards.Run(ctx, stop) }()
	return nil
}

// endShards gives every shard up once the passes in flight end, within
// the shutdown timeout; a pass still running then is cut off and gets
// the record grace to note it.
func (d *daemon) endShards(log *slog.Logger) {
	if d.shardsDone == nil {
		return
	}
	d.stopShards()
	select {
	case <-d.shardsDone:
		return
	case <-time.After(d.o.ShutdownTimeout):
	}
	log.Warn("the shards' passes did not end within --shutdown-timeout; interrupting them")
	d.cutShards()
	select {
	case <-d.shardsDone:
	case <-time.After(recordGrace):
		log.Warn("the interrupted passes did not record within the grace period", "grace", recordGrace)
	}
}

// shardsHeld is pinbot_shards_held: how many shards this replica passes.
func (d *daemon) shardsHeld() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pinbot_shards_held",
		Help: "How many of the --shards shards this replica holds and passes the apps of; 0 without sharding.",
	}, func() float64 {
		if d.shards == nil {
			return 0
		}
		return float64(len(d.shards.Held()))
	})
}
