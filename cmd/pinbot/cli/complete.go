package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/serve"
)

// completeApps completes APP with the names of the config's apps: the
// config of --config as typed so far, else $PINBOT_CONFIG. It reads the
// file only, offline; a config that does not load completes nothing.
func completeApps(f *reconcilerFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 || f.config == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := serve.Load(f.config)
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
