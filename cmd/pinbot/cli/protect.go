package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/release"
)

// protectOptions are the flags of pinbot protect.
type protectOptions struct {
	forgeURL, repo, tokenFile, caFile, branch string
	insecure, apply                           bool
	mergers                                   []string
}

func newProtectCommand(g *globals) *cobra.Command {
	o := &protectOptions{}
	cmd := &cobra.Command{
		Use:   "protect --forge-url URL --repo OWNER/NAME [--apply]",
		Short: "Check that branch protection makes the pinbot/gate check binding, and set it",
		Long: `Protect reads the Gitea branch protection of the manifest repository's branch
(default: its default branch) and says whether pull requests into it must
pass the pinbot/gate status check, which pinbot serve posts on every pull
request. Without it the gate only advises: a reviewer can merge a held or
unproven digest.

With --apply it makes the check required (a repository admin's token):
the rule covering the branch gets it, or a rule for the branch is made.
It exits 1 when the check is not required and --apply was not given.

A required status is one any writer of the repository can post herself,
so protect also says who may merge (the rule's merge allow-list); with
--apply, --merge-allow pinbot,ADMIN sets it. Others then label a pull
request pinbot/merge, and pinbot merges it at the head it passed. It marks a
merge whose head lacked its own passing pinbot/gate as a gate bypass: its
proof lifts no hold and is never attested.`,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := loopback.CheckURL(o.forgeURL, o.insecure)
			if err != nil {
				return usageErrorf("flag --forge-url %s: %w (--insecure-forge allows plain HTTP)", clip.Quote(redact.URL(o.forgeURL)), err)
			}
			repo, err := gitforge.ParseRepo(o.repo)
			if err != nil {
				return usageErrorf("flag --repo: %w", err)
			}
			forge, err := gitforge.Dial(u.String(), o.tokenFile, o.caFile, "")
			if err != nil {
				return err
			}
			b, err := forge.Bind(cmd.Context(), repo, o.branch, release.PullContext, o.apply, o.mergers)
			if err != nil {
				return err
			}
			if err := output.Protection(cmd.OutOrStdout(), g.json(), repo, b); err != nil {
				return err
			}
			if !b.Binding {
				return fmt.Errorf("%s of %s: %s is not a required status check, so the gate only advises (run pinbot protect --apply with an admin's token)", b.Branch, repo, release.PullContext)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.forgeURL, "forge-url", os.Getenv(forgeURLEnv), "Gitea base URL (default $"+forgeURLEnv+")")
	fl.StringVar(&o.repo, "repo", os.Getenv(repoEnv), "manifest repository OWNER/NAME (default $"+repoEnv+")")
	fl.StringVar(&o.tokenFile, "token-file", "", "file holding the Gitea token (default: $"+tokenEnv+")")
	fl.StringVar(&o.caFile, "ca-file", "", "PEM bundle to trust for the forge, besides the system roots")
	fl.BoolVar(&o.insecure, "insecure-forge", false, "allow a plain-HTTP --forge-url that is not loopback")
	fl.StringVar(&o.branch, "branch", "", "the branch pull requests go into (default: the repository's default branch)")
	fl.BoolVar(&o.apply, "apply", false, "make pinbot/gate a required status check where it is not")
	fl.StringSliceVar(&o.mergers, "merge-allow", nil, "with --apply, the merge allow-list: pinbot's account and the users (or team:NAME) who may merge past its queue")
	return cmd
}
