package cli

import (
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/buildinfo"
)

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pinbot's version, commit, build date, Go version and platform",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return output.Version(cmd.OutOrStdout(), g.json(), buildinfo.Current())
		},
	}
}
