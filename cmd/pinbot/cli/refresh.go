package cli

import (
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/serve"
)

func newRefreshCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	cmd := &cobra.Command{
		Use:   "refresh APP [--config FILE | -n NAMESPACE]",
		Short: "Ask the running pinbot serve to pass APP now",
		Long: `Refresh asks the running pinbot serve (its leader, whichever replica that
is) to pass APP at once, as flux reconcile asks a controller: it stamps
APP on the trigger ConfigMap in the config's stateNamespace, which the
leader watches. It returns once the request is written; pinbot status APP
shows the pass. It needs only patch (and create) on that ConfigMap.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := f.source(cmd.Context())
			if err != nil {
				return err
			}
			cfg, err := src.Load()
			if err != nil {
				return err
			}
			if _, err := cfg.App(args[0]); err != nil {
				return usageErrorf("argument APP: %w", err)
			}
			kube, err := src.Kube()
			if err != nil {
				return err
			}
			if err := serve.Refresh(cmd.Context(), kube, cfg.StateNamespace, args[0]); err != nil {
				return err
			}
			return output.Refreshed(cmd.OutOrStdout(), g.json(), args[0])
		},
	}
	f.bindConfig(cmd)
	f.bindNamespace(cmd)
	return cmd
}
