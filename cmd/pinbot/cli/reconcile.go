package cli

import (
	"github.com/spf13/cobra"
)

func newReconcileCommand(_ *globals) *cobra.Command {
	f := &reconcilerFlags{}
	cmd := &cobra.Command{
		Use:   "reconcile --config FILE",
		Short: "Run the reconciler loop: follow each app's branch, apply (when automated) and verify",
		Long: `Reconcile every app of the config until interrupted. Each app's branch is
fetched every interval (default 60s); its manifests are rendered, compared
with the cluster, applied when the app's syncPolicy.automated is true (the
default is detection only: run "pinbot sync APP"), and its Pods verified
against the digests Git pins. Status and the last 10 syncs are kept in a
ConfigMap per app in the config's stateNamespace (default pinbot-system),
and each synced commit gets the Gitea commit status pinbot/<app>.

Logs go to stderr. Bad configuration stops the command; unreachable Git or
cluster are retried with backoff.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, _, err := f.open()
			if err != nil {
				return err
			}
			defer r.Close()
			return r.Run(cmd.Context())
		},
	}
	f.bind(cmd)
	return cmd
}
