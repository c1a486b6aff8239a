package cli

import (
	"bufio"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/gctune"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
)

// pinsListOptions are the flags of `pinbot pins list`.
type pinsListOptions struct {
	dir      string
	vendored bool
}

// Validate checks the flags.
func (o *pinsListOptions) Validate() error {
	if o.dir == "" {
		return usageErrorf("flag --dir: want a directory, got an empty string")
	}
	return nil
}

func newPinsListCommand(g *globals) *cobra.Command {
	o := &pinsListOptions{}
	cmd := &cobra.Command{
		Use:   "list [--dir DIR]",
		Short: "List every digest pin under a directory",
		Long: `List every digest pin under DIR (default: the current directory), sorted by
file, line and column. Files are named relative to DIR; line and column are
those of the digest itself. Pins frozen with a "# pinbot: ignore" comment are
listed as ignored. Every malformed YAML file is named in a warning on stderr
with the line of its error (the documents of it that parse are listed), and
unreadable files and files over 10 MiB are skipped with a warning. With -o
json, a failure also prints {"error": ..., "file": ..., "line": N} on stdout. node_modules/ and vendor/ are skipped
unless --include-vendored.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".", "directory to scan")
	cmd.Flags().BoolVar(&o.vendored, "include-vendored", false, "also list files under node_modules/ and vendor/, skipped by default")
	return cmd
}

// run lists the pins.
func (o *pinsListOptions) run(cmd *cobra.Command, g *globals) error {
	if err := o.Validate(); err != nil {
		return err
	}
	defer gctune.Batch()()
	opts := []pins.Option{pinsWarnings(logctx.From(cmd.Context()))}
	if o.vendored {
		opts = append(opts, pins.WithVendored())
	}
	found, err := pins.Scan(o.dir, opts...)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	if g.json() {
		err = output.PinsJSON(w, found)
	} else {
		err = output.Pins(w, found)
	}
	if err != nil {
		return err
	}
	return w.Flush()
}
