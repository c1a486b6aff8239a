package cli

import (
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/serve"
)

func newServeCommand(_ *globals) *cobra.Command {
	f := &reconcilerFlags{}
	sf := &serveFlags{}
	o := serve.Options{Dashboard: true}
	cmd := &cobra.Command{
		Use:   "serve --config FILE --listen ADDR [--leader-elect] [--id NAME]",
		Short: "Run pinbot as a service: the reconcile loops, webhooks, the dashboard and metrics, highly available",
		Long: `Serve runs the reconcile loops of every app of the config (as "pinbot
reconcile" does) and serves, on --listen: / (the dashboard), /healthz,
/readyz, /metrics and /webhook/gitea (Gitea push, pull request and package
webhooks, signed with the secret of --webhook-secret-file or
$PINBOT_WEBHOOK_SECRET). A package event for an image of the config's
promote: entries opens or updates the promotion pull request.

The config's stateNamespace must exist (kubectl apply -k deploy/base creates
it); serve stops at once when it does not.

With --leader-elect the replicas elect a leader through the Lease "pinbot"
in the state namespace (holder --id, default the hostname). Only the
leader writes: syncs, heals, prunes, commit statuses, comments and
promotions. Every replica serves the dashboard, /metrics and /readyz; a
webhook (push or package) that reaches a follower is forwarded to the
leader by annotating the ConfigMap pinbot-trigger in the state namespace,
which the leader watches. A replica
that loses the Lease exits 1, to be restarted as a follower.

With --shards N as well, the replicas split the apps: an app's shard
(of N) hashes its cluster and namespace, and each shard is passed by the
replica holding its Lease pinbot-shard-K. Each replica announces itself
with a Lease pinbot-member-ID; all of them compute the same balanced
assignment of shards to the members they see, so the shards spread
evenly. A replica gives a shard up only after its passes end, and one
that dies loses its shards when their Leases expire, within
--lease-duration and a --retry-period. The leader still runs the
promotions, the drift schedules and the release chains.

On SIGTERM, webhooks answer 503, the loops get --shutdown-timeout to
stop (a sync still running then is cut off and recorded as interrupted,
so the next leader applies it again), the Lease is released and serve
exits 0.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Shards > 0 && o.Lease.ID == "" {
				o.Lease.ID = serve.DefaultID()
			}
			return runServe(cmd, f, sf, o)
		},
	}
	f.bind(cmd)
	sf.bind(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&o.Elect, "leader-elect", false, "elect a leader through the Lease pinbot in the state namespace; only the leader writes")
	fl.StringVar(&o.Lease.ID, "id", "", "this replica's holderIdentity in the Lease (default the hostname)")
	fl.IntVar(&o.Shards, "shards", 0, "with --leader-elect, split the apps into this many shards, each passed by the replica holding its Lease pinbot-shard-K (the same number on every replica); 0 lets the leader pass them all")
	fl.DurationVar(&o.Lease.Duration, "lease-duration", 35*time.Second, "how long followers wait before taking a Lease that was not renewed")
	fl.DurationVar(&o.Lease.RenewDeadline, "renew-deadline", 30*time.Second, "how long the leader tries to renew before giving up leadership")
	fl.DurationVar(&o.Lease.RetryPeriod, "retry-period", 5*time.Second, "how often replicas try to acquire or renew the Lease")
	fl.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", serve.DefaultShutdownTimeout, "on SIGTERM, how long the sync in flight may take before pinbot exits")
	return cmd
}
