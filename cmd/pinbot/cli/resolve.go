package cli

import (
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/flags"
	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/registry"
)

// resolveOptions are the flags of `pinbot resolve`.
type resolveOptions struct {
	insecure []string
}

// Validate checks the flags.
func (o *resolveOptions) Validate() error {
	return flags.CheckInsecureRegistries(o.insecure)
}

func newResolveCommand(g *globals) *cobra.Command {
	o := &resolveOptions{}
	cmd := &cobra.Command{
		Use:   "resolve REF",
		Short: "Resolve an image reference to its digest and describe what it holds",
		Long: `Resolve REF (repo:tag or repo@sha256:...) to a digest, asking the registry
with HEAD first, and describe it: media type, platforms of an index, created
time, labels, annotations, OCI revision/source/version, and total size.

Credentials come from the docker config ($DOCKER_CONFIG/config.json or
~/.docker/config.json). Plain HTTP is used only for loopback registries and
those named with --insecure-registry.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if _, err := registry.Normalize(args[0]); err != nil {
				return usageErrorf("argument REF: %w", err)
			}
			c, err := registry.New(registry.WithInsecure(o.insecure...))
			if err != nil {
				return usageErrorf("--insecure-registry: %w", err)
			}
			img, err := c.Describe(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return output.Image(cmd.OutOrStdout(), g.json(), img)
		},
	}
	cmd.Flags().StringArrayVar(&o.insecure, "insecure-registry", nil,
		"allow plain HTTP to this registry host or host:port (repeatable); loopback is always allowed")
	return cmd
}
