package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newChainCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "chain", Short: "Pause or resume the onward promotions into an environment"}
	cmd.AddCommand(newChainVerb("pause"), newChainVerb("resume"))
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
