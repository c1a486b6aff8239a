package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/reconciler"
)

// syncOptions are the flags of `pinbot sync` besides the shared ones.
type syncOptions struct {
	wait    time.Duration
	waitSet bool // --wait given explicitly
	prune   bool
	dryRun  bool
}

// Validate checks the flags.
func (o *syncOptions) Validate() error {
	switch {
	case o.wait < 0:
		return usageErrorf("flag --wait: want a duration of 0 or more, got %s", o.wait)
	case o.dryRun && o.waitSet:
		return usageErrorf("flag --wait: a dry run applies nothing to wait for")
	}
	return nil
}

// options turns the flags into the reconciler's per-sync options.
func (o *syncOptions) options() []reconciler.SyncOption {
	if o.prune {
		return []reconciler.SyncOption{reconciler.SyncPrune()}
	}
	return nil
}

func newSyncCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	o := &syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync APP [--config FILE | -n NAMESPACE] [--prune] [--dry-run]",
		Short: "Apply APP's current Git commit once, then follow the rollout until it is verified",
		Long: `Sync fetches APP's branch, renders and checks its manifests, and applies
them with server-side apply (field manager "pinbot"), wave by wave in
ascending order of the annotation pinbot.dev/sync-wave (or Argo CD's
argocd.argoproj.io/sync-wave; default 0). Namespaces and CRDs go first.
Each wave but the last must become ready (kstatus Current; a Job must have
completed) within the app's waveTimeout before the next is applied.

A render error, an empty render (unless allowEmpty), a bad wave annotation
or an object outside the app's allowNamespaces stops the sync before
anything is applied; a failed apply, a failed wave or a wave that times out
stops it and names the object. The sync is recorded in the app's history,
and the commit gets the Gitea status pinbot/<app>: pending, then success
or failure.

Objects of the app's inventory that Git no longer declares are deleted
only when the app's syncPolicy has prune: true, or with --prune for this
sync; objects annotated pinbot.dev/prune: "false", Namespaces, CRDs and
objects outside allowNamespaces are never deleted.

With --dry-run it prints what the sync would apply (per wave, each object
checked by a server-side apply dry run), heal and prune, and changes
nothing; it exits 1 if the API server would refuse an object.

With --wait (default 5m) the command follows the rollout until the Pods
are verified, the verification fails, or the wait ends, and exits 1
unless verified. --wait 0 returns right after applying.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.waitSet = cmd.Flags().Changed("wait")
			if err := o.Validate(); err != nil {
				return err
			}
			r, _, err := f.open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if o.dryRun {
				p, err := r.DryRun(cmd.Context(), args[0], o.options()...)
				if err != nil {
					return err
				}
				if err := output.Plan(cmd.OutOrStdout(), g.json(), p); err != nil {
					return err
				}
				if p.Failed() {
					return fmt.Errorf("%s: the API server would refuse objects of %s (see above)", p.App, commitid.Short(p.Commit))
				}
				return nil
			}
			s, v, err := r.Sync(cmd.Context(), args[0], o.wait, o.options()...)
			if s != nil {
				if werr := output.Sync(cmd.OutOrStdout(), g.json(), s, v); werr != nil {
					return errors.Join(err, werr)
				}
			}
			switch {
			case err != nil:
				return err
			case o.wait > 0 && !s.Verified:
				return fmt.Errorf("%s synced to %s but not verified: %s", s.App, commitid.Short(s.Commit), s.Verification)
			}
			return nil
		},
	}
	f.bindReading(cmd)
	cmd.Flags().DurationVar(&o.wait, "wait", 5*time.Minute, "how long to follow the rollout until verified (0: do not wait)")
	cmd.Flags().BoolVar(&o.prune, "prune", false, "delete the app's objects Git no longer declares in this sync, even if the app's policy has prune off")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print what the sync would apply, heal and prune; change nothing")
	return cmd
}
