package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"pinbot.dev/pinbot/internal/buildinfo"
)

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pinbot's version, commit, build date, Go version and platform",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := buildinfo.Current()
			if g.json() {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(b)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pinbot %s\n  commit:   %s\n  built:    %s\n  go:       %s\n  platform: %s\n",
				b.Version, b.Commit, b.BuildDate, b.GoVersion, b.Platform)
			return err
		},
	}
}
