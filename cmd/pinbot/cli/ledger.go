package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release/store"
)

// ledgerFlags are the flags of `pinbot ledger` and `pinbot hold`.
type ledgerFlags struct {
	rf   reconcilerFlags
	repo string
}

func (f *ledgerFlags) bind(cmd *cobra.Command) {
	f.rf.bindConfig(cmd)
	f.rf.bindNamespace(cmd)
	cmd.Flags().StringVar(&f.repo, "repo", "", "manifest repository OWNER/NAME (default: every repository with a ledger)")
}

// ledgers opens the ledger store and names the repositories asked for.
func (f *ledgerFlags) ledgers(ctx context.Context) (*store.Ledgers, []string, error) {
	src, err := f.rf.source(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := src.Load()
	if err != nil {
		return nil, nil, err
	}
	kube, err := src.Kube()
	if err != nil {
		return nil, nil, err
	}
	s := store.New(kube, cfg.StateNamespace)
	if f.repo != "" {
		if _, err := gitforge.ParseRepo(f.repo); err != nil {
			return nil, nil, usageErrorf("flag --repo: %w", err)
		}
		return s, []string{f.repo}, nil
	}
	repos, err := s.Repositories(ctx)
	return s, repos, err
}

func newLedgerCommand(g *globals) *cobra.Command {
	f, audit, writers := &ledgerFlags{}, false, false
	cmd := &cobra.Command{
		Use:   "ledger [--config FILE | -n NAMESPACE] [--repo OWNER/NAME] [--audit]",
		Short: "Show which digest runs where: each environment's pinned and proven digest, soaks, gates, holds",
		Long: `The ledger pinbot serve keeps in the cluster (a ConfigMap per manifest
repository in the state namespace), for each environment of the
repositories' .pinbot.yaml chains and each image: the digest Git pins, the
digest proven running and since when (the soak), pinbot's open promotion
and rollback pull requests with their pinbot/gate state, the freeze
windows in force, the held digests and the latest decisions. With --audit,
what people did instead: who paused, resumed, released or resealed, when
and why (the dashboard's actions and the CLI's alike). With --writers, who
may write ConfigMaps in the state namespace, and whether they may read
the key that seals the ledgers (then they can lift a hold unseen).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, repos, err := f.ledgers(ctx)
			if err != nil {
				return err
			}
			if writers {
				ws, err := s.Writers(ctx)
				return cmp.Or(err, output.Writers(cmd.OutOrStdout(), g.json(), ws))
			}
			var out []output.RepoLedger
			for _, r := range repos {
				l, _, err := s.Get(ctx, r)
				if err != nil {
					return err
				}
				out = append(out, output.RepoLedger{Repo: r, Ledger: l})
			}
			if audit {
				return output.Audit(cmd.OutOrStdout(), g.json(), out)
			}
			return output.Ledgers(cmd.OutOrStdout(), g.json(), out, time.Now())
		},
	}
	f.bind(cmd)
	cmd.Flags().BoolVar(&audit, "audit", false, "show what people did: who, when, what and why")
	cmd.Flags().BoolVar(&writers, "writers", false, "show who the cluster's RBAC lets write the ledgers, and who may read their key too (needs an admin's access)")
	cmd.AddCommand(newResealCommand())
	return cmd
}

func newResealCommand() *cobra.Command {
	f := &ledgerFlags{}
	var why string
	cmd := &cobra.Command{
		Use:   "reseal --repo OWNER/NAME --reason TEXT [--config FILE | -n NAMESPACE]",
		Short: "Accept a ledger changed outside pinbot, as it stands",
		Long: `A ledger carries a seal made with the key in the Secret pinbot-ledger-key;
one changed by anyone without the key is trusted for nothing: the gate
refuses, and serve writes back the version it last saw when it can. Once
checked, reseal accepts the ledger as it stands, recording who and why; a
ledger whose ConfigMap was deleted starts over, empty. Needs get on that Secret.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.repo == "" {
				return usageErrorf("flag --repo: required: the repository whose ledger to accept")
			}
			if strings.TrimSpace(why) == "" {
				return usageErrorf("flag --reason: required: the ledger records who accepted it, and why")
			}
			ctx := cmd.Context()
			s, repos, err := f.ledgers(ctx)
			if err != nil {
				return err
			}
			if err := s.Reseal(ctx, repos[0], s.Caller(ctx), why, time.Now()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "resealed the ledger of %s\n", repos[0])
			return err
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&why, "reason", "", "why the ledger is accepted as it stands (required; recorded in the ledger with who accepted it)")
	return cmd
}

func newHoldCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hold",
		Short: "List or release the digests held after a failed proof",
		Long: `A digest that failed to prove after it merged into an environment is held
there and in every environment after it: drift, promote and pinbot's onward
promotions refuse it, naming the hold, until a person releases it or a
newer digest is pinned in the environment.`,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	list := &ledgerFlags{}
	listCmd := &cobra.Command{
		Use:   "list [--config FILE | -n NAMESPACE] [--repo OWNER/NAME]",
		Short: "List the held digests",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, repos, err := list.ledgers(ctx)
			if err != nil {
				return err
			}
			holds, err := s.Holds(ctx, repos)
			if err != nil {
				return err
			}
			return output.Holds(cmd.OutOrStdout(), g.json(), holds)
		},
	}
	list.bind(listCmd)
	rel := &ledgerFlags{}
	var why string
	releaseCmd := &cobra.Command{
		Use:   "release ENV IMAGE@DIGEST --reason TEXT [--config FILE | -n NAMESPACE] [--repo OWNER/NAME]",
		Short: "Release a held digest in an environment (and where the same failure held it after it)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			env := args[0]
			image, digest, err := store.HeldRef(args[1])
			if err != nil {
				return usageErrorf("argument IMAGE@DIGEST: want REPOSITORY@sha256:... (the whole digest, or the 12 or more hex digits pinbot shows), got %s", clip.QuoteRef(args[1]))
			}
			if strings.TrimSpace(why) == "" {
				return usageErrorf("flag --reason: required: the ledger records who released a hold, and why")
			}
			s, repos, err := rel.ledgers(ctx)
			if err != nil {
				return err
			}
			released, err := s.Release(ctx, repos, env, image, digest, s.Caller(ctx), why, time.Now())
			if err != nil {
				return err
			}
			if released == "" {
				return fmt.Errorf("%s is not held in %s", args[1], env)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "released %s@%s in %s (%s)\n", image, imageref.Short(digest), env, released)
			return err
		},
	}
	rel.bind(releaseCmd)
	releaseCmd.Flags().StringVar(&why, "reason", "", "why the hold is lifted (required; recorded in the ledger with who lifted it)")
	cmd.AddCommand(listCmd, releaseCmd)
	return cmd
}
