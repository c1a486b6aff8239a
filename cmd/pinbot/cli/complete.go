package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/serve"
)

// completeApps completes APP with the names of the apps of the config the
// command would read: --config as typed so far, $PINBOT_CONFIG, else
// pinbot serve's in -n's namespace of the cluster, read within 5 s. A
// config that does not load completes nothing, and never file names.
func completeApps(f *reconcilerFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		src := serve.Source{File: f.config, Kubeconfig: f.kubeconfig, Context: f.context}
		if f.config == "" {
			done, err := src.FromCluster(ctx, f.namespace)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			defer func() { _ = done() }()
		}
		cfg, err := src.Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, a := range cfg.Apps {
			if strings.HasPrefix(a.Name, toComplete) {
				names = append(names, a.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
