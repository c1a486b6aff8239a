package cli

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/pins"
)

func newPinsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "List and set image digest pins in a manifest tree",
		Long: `Find image digest pins in Kubernetes manifests, kustomizations, Helm values,
Dockerfiles and pins files, and rewrite them in place: only the digest
(and, when asked, the tag) changes; every other byte of a file stays as it was.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPinsListCommand(g), newPinsSetCommand(g))
	return cmd
}

// pinsWarnings logs the files pins skipped, such as malformed YAML that
// does not concern the command, at warning level.
func pinsWarnings(logger *slog.Logger) pins.Option {
	return pins.WithWarnings(func(file string, err error) {
		logger.Warn("skipped file", "file", file, "reason", err.Error())
	})
}

// pauseHook returns the phase hook that pauses where a test asks (see
// pauseAt).
func pauseHook(ctx context.Context, stderr io.Writer) pins.Option {
	return pins.WithPhaseHook(func(p pins.Phase) { pauseAt(ctx, stderr, string(p)) })
}
