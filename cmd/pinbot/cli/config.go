package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/cmd/pinbot/internal/validate"
	"pinbot.dev/pinbot/promote"
)

func newConfigCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check pinbot's configuration files",
	}
	cmd.AddCommand(newConfigValidateCommand(g))
	return cmd
}

func newConfigValidateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Validate .pinbot.yaml and the reconciler (serve) config offline",
		Long: `Validates each FILE without reaching Gitea, a registry or a cluster. A file
named .pinbot.yaml is a manifest repository's config: its signature keys
and trusted roots are read from beside it, as promote reads them from the
repository. Any other file is the reconciler's (serve's) config. Unknown
keys, bad values and missing files are errors naming file:line.

Files given together are checked against each other: the apps a
.pinbot.yaml's environments name must be apps of the serve config given
(a note, not an error, when that config discovers apps).

Without FILE it validates $` + configEnv + ` when set and ./.pinbot.yaml when
present, together. Exits 1 when any file is invalid.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := args
			if len(files) == 0 {
				if f := os.Getenv(configEnv); f != "" {
					files = append(files, f)
				}
				if _, err := os.Stat(promote.ConfigFile); err == nil {
					files = append(files, promote.ConfigFile)
				}
			}
			if len(files) == 0 {
				return usageErrorf("no FILE given, $%s is not set and there is no %s here", configEnv, promote.ConfigFile)
			}
			out := validate.Files(files)
			bad := 0
			for _, v := range out {
				if !v.Valid {
					bad++
				}
			}
			if err := output.ConfigsValidated(cmd.OutOrStdout(), g.json(), out); err != nil {
				return err
			}
			if bad > 0 {
				// The output said why; the exit code says it failed.
				return fmt.Errorf("%d of %d config files are invalid", bad, len(out))
			}
			return nil
		},
	}
}
