package cli

import (
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/serve"
)

func newReconcileCommand(_ *globals) *cobra.Command {
	f := &reconcilerFlags{}
	sf := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "reconcile --config FILE",
		Short: "Deprecated: use pinbot serve. Run the reconciler loop without leader election and the dashboard",
		// The old name of the daemon, kept for one release.
		Deprecated: `use "pinbot serve"; "reconcile" goes in the next release`,
		Long: `Reconcile every app of the config until interrupted. Each app's branch is
fetched every interval (default 60s); its manifests are rendered, compared
with the cluster, applied when the app's syncPolicy.automated is true (the
default is detection only: run "pinbot sync APP"), and its Pods verified
against the digests Git pins. Status and the last 10 syncs are kept in a
ConfigMap per app in the config's stateNamespace (default pinbot-system),
and each synced commit gets the Gitea commit status pinbot/<app>.

Logs go to stderr. Bad configuration stops the command; unreachable Git or
cluster are retried with backoff.

With --listen ADDR it also serves, on ADDR: /webhook/gitea, Gitea push
webhooks (signed with the secret of --webhook-secret-file or
$PINBOT_WEBHOOK_SECRET) that trigger a pass of the apps following the
pushed branch at once; /metrics, Prometheus metrics; and /healthz.

reconcile is "pinbot serve" without leader election and the dashboard.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, f, sf, serve.Options{ShutdownTimeout: serve.DefaultShutdownTimeout})
		},
	}
	f.bind(cmd)
	sf.bind(cmd)
	return cmd
}
