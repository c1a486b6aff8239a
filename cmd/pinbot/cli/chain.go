package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/chains"
)

func newChainCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "chain", Short: "Pause or resume the onward promotions into an environment, or approve a change of the chain"}
	cmd.AddCommand(newChainVerb("pause"), newChainVerb("resume"), newChainApprove())
	return cmd
}

// newChainApprove is `pinbot chain approve PR --head SHA --reason TEXT`:
// it records in --repo's ledger that the pull request's head may change
// the chain's environments, with who and why.
func newChainApprove() *cobra.Command {
	f := &ledgerFlags{}
	var head, why string
	cmd := &cobra.Command{
		Use:   "approve PR --head SHA --reason TEXT --repo OWNER/NAME [--config FILE | -n NAMESPACE]",
		Short: "Approve pull request PR's change of the chain's environments, at the head its pinbot/gate names",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pr, err := strconv.ParseInt(args[0], 10, 64)
			switch {
			case err != nil || pr <= 0:
				return usageErrorf("argument PR: want a pull request number, got %q", args[0])
			case f.repo == "" || strings.TrimSpace(why) == "":
				return usageErrorf("flags --repo and --reason: required: the ledger records who approved what, and why")
			}
			s, repos, err := f.ledgers(cmd.Context())
			if err != nil {
				return err
			}
			who := s.Caller(cmd.Context())
			if err := s.Update(cmd.Context(), repos[0], func(l *release.Ledger) error {
				return chains.ApproveChain(l, pr, head, who, why, time.Now())
			}); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "approved #%d of %s at %s: pinbot judges it at its next step\n", pr, repos[0], head)
			return err
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&head, "head", "", "the full commit SHA of the head approved, as the pull request's pinbot/gate names it")
	cmd.Flags().StringVar(&why, "reason", "", "why (required; recorded in the ledger with who approved it)")
	return cmd
}

// newChainVerb is `pinbot chain pause|resume ENV --reason TEXT`: it
// writes the pause into the ledger of each repository whose chain has
// ENV (or --repo's), with who and why; serve's next step honours it.
func newChainVerb(verb string) *cobra.Command {
	f := &ledgerFlags{}
	var why string
	cmd := &cobra.Command{
		Use: verb + " ENV --reason TEXT [--repo OWNER/NAME] [--config FILE | -n NAMESPACE]",
		Short: map[string]string{"pause": "Pause the onward promotions into ENV: none opens, none merges, until resumed (rollbacks go on)",
			"resume": "Resume the onward promotions into ENV"}[verb],
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(why) == "" {
				return usageErrorf("flag --reason: required: the ledger records who %sd the chain, and why", verb)
			}
			ctx := cmd.Context()
			s, repos, err := f.ledgers(ctx)
			if err != nil {
				return err
			}
			env := args[0]
			done, err := s.Pause(ctx, repos, env, verb == "resume", s.Caller(ctx), why, time.Now())
			if err != nil {
				return err
			}
			if done == 0 {
				return fmt.Errorf("no chain to %s: no ledger has an environment %s that is %s", verb, env, map[string]string{"pause": "not paused", "resume": "paused"}[verb])
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%sd %s in %d repositories\n", verb, env, done)
			return err
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&why, "reason", "", "why (required; recorded in the ledger with who did it)")
	return cmd
}
