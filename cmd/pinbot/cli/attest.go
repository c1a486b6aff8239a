package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/flags"
	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
)

func newAttestCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attest",
		Short: "Check the signed \"proven running\" attestations pinbot serve attaches to images",
	}
	cmd.AddCommand(newAttestVerifyCommand(g))
	return cmd
}

// attestVerifyFlags are the flags of `pinbot attest verify`.
type attestVerifyFlags struct {
	env      string
	minSoak  time.Duration
	keys     []string
	insecure []string
}

// Validate checks the flags.
func (f *attestVerifyFlags) Validate() error {
	switch {
	case f.env == "":
		return usageErrorf("flag --env: required: the environment the digest must have been proven in")
	case len(f.keys) == 0:
		return usageErrorf("flag --key: required: the cosign public key pinbot serve signs with (attest.keyFile's public half)")
	case f.minSoak < 0:
		return usageErrorf("flag --min-soak: must not be negative")
	}
	for _, k := range f.keys {
		if _, err := os.Stat(k); err != nil {
			return usageErrorf("flag --key: %w", err)
		}
	}
	return flags.CheckInsecureRegistries(f.insecure)
}

func newAttestVerifyCommand(g *globals) *cobra.Command {
	f := &attestVerifyFlags{}
	cmd := &cobra.Command{
		Use:   "verify IMAGE --env ENV --key cosign.pub [--min-soak DURATION]",
		Short: "Say from the registry alone whether IMAGE was proven running in an environment",
		Long: `Read the "proven running" attestations attached to IMAGE (repo@sha256:...,
or repo:tag, resolved to its digest) from its registry, keep those signed by
--key, and pass (exit 0) when one says the digest was proven running in --env
for at least --min-soak. Otherwise exit 1, saying why for each attestation.
Nothing but the registry is asked: not pinbot serve, not the cluster.

The same check with cosign: cosign verify-attestation --key cosign.pub
--type ` + proven.PredicateType + ` IMAGE.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.Validate(); err != nil {
				return err
			}
			if _, err := registry.Normalize(args[0]); err != nil {
				return usageErrorf("argument IMAGE: %w", err)
			}
			reg, err := registry.New(registry.WithInsecure(f.insecure...))
			if err != nil {
				return usageErrorf("--insecure-registry: %w", err)
			}
			d, err := reg.Resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			q := attest.Query{Image: d.Repository, Digest: d.Digest, Env: f.env, MinSoak: f.minSoak}
			var keys []string
			for _, k := range f.keys {
				abs, err := filepath.Abs(k)
				if err != nil {
					return usageErrorf("flag --key: %w", err)
				}
				keys = append(keys, abs[1:]) // relative to the root os.DirFS reads
			}
			if q.Keys, err = trust.LoadKeys(keys, os.DirFS("/")); err != nil {
				return usageErrorf("flag --key: %w", err)
			}
			a, err := attest.Verify(cmd.Context(), reg, q)
			if err != nil {
				return err
			}
			if err := output.Attestation(cmd.OutOrStdout(), g.json(), q.Image+"@"+q.Digest, a); err != nil {
				return err
			}
			if !a.Passed {
				return fmt.Errorf("%s@%s: no attestation says it was proven running in %s%s", q.Image, q.Digest, f.env, output.ForSoak(f.minSoak))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.env, "env", "", "the environment the digest must have been proven running in (required)")
	cmd.Flags().DurationVar(&f.minSoak, "min-soak", 0, "how long it must have stayed proven there, such as 24h (default: proven at all)")
	cmd.Flags().StringArrayVar(&f.keys, "key", nil, "a cosign public key (PEM) the attestation must be signed with (repeatable; required)")
	cmd.Flags().StringArrayVar(&f.insecure, "insecure-registry", nil,
		"allow plain HTTP to this registry host or host:port (repeatable); loopback is always allowed")
	return cmd
}
