package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X .../cli.version=...".
var version = "dev"

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pinbot's version",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.json() {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]string{
					"version": version,
					"go":      runtime.Version(),
				})
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pinbot %s (%s)\n", version, runtime.Version())
			return err
		},
	}
}
