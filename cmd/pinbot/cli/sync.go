package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/reconciler"
)

// syncOptions are the flags of `pinbot sync` besides the shared ones.
type syncOptions struct {
	wait time.Duration
}

// Validate checks the flags.
func (o *syncOptions) Validate() error {
	if o.wait < 0 {
		return usageErrorf("flag --wait: want a duration of 0 or more, got %s", o.wait)
	}
	return nil
}

func newSyncCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	o := &syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync APP --config FILE",
		Short: "Apply APP's current Git commit once, then follow the rollout until it is verified",
		Long: `Sync fetches APP's branch, renders and checks its manifests, and applies
them with server-side apply (field manager "pinbot"): Namespaces and CRDs
first. A render error or an object outside the app's allowNamespaces stops
the sync before anything is applied; a failed apply stops it and names the
object. The sync is recorded in the app's history, and the commit gets the
Gitea status pinbot/<app>: pending, then success or failure.

With --wait (default 5m) the command then follows the rollout until the
Pods are verified, the verification fails, or the wait ends, and exits 1
unless verified. --wait 0 returns right after applying.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			r, _, err := f.open(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			s, v, err := r.Sync(cmd.Context(), args[0], o.wait)
			if s != nil {
				if werr := writeSync(cmd, g, s, v); werr != nil {
					return errors.Join(err, werr)
				}
			}
			switch {
			case err != nil:
				return err
			case o.wait > 0 && !s.Verified:
				return fmt.Errorf("%s synced to %s but not verified: %s", s.App, abbrev(s.Commit, 12), s.Verification)
			}
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().DurationVar(&o.wait, "wait", 5*time.Minute, "how long to follow the rollout until verified (0: do not wait)")
	return cmd
}

func writeSync(cmd *cobra.Command, g *globals, s *reconciler.AppStatus, v *reconciler.Verification) error {
	w := cmd.OutOrStdout()
	if g.json() {
		return json.NewEncoder(w).Encode(struct {
			Status       *reconciler.AppStatus    `json:"status"`
			Verification *reconciler.Verification `json:"verification"`
		}{s, v})
	}
	if err := writeStatuses(w, []*reconciler.AppStatus{s}); err != nil {
		return err
	}
	if v != nil {
		fmt.Fprintln(w)
		return writeVerification(w, v)
	}
	return nil
}
