package cli

import (
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
)

func newHistoryCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	cmd := &cobra.Command{
		Use:   "history APP [--config FILE | -n NAMESPACE]",
		Short: "Show APP's last syncs: commit, time, result, health and the digests verified",
		Long: `History prints the last 10 syncs of APP, newest first, as the reconciler
keeps them in the ConfigMap pinbot-app-<APP> of its stateNamespace: the
commit, when and how it was synced (auto or manual), the result (Applied,
Failed or Refused, with the reason), the health, and once verified the
digests the Pods run. -o json prints {"status":{...},"entries":[...]}.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _, err := f.openReading(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			rec, err := r.History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return output.History(cmd.OutOrStdout(), g.json(), args[0], rec)
		},
	}
	f.bindReading(cmd)
	return cmd
}
