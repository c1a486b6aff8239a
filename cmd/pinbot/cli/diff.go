package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/commitid"
)

func newDiffCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	cmd := &cobra.Command{
		Use:   "diff APP [--config FILE | -n NAMESPACE]",
		Short: "Show how the cluster differs from APP's Git commit, field by field; exit 1 when it does",
		Long: `Diff fetches APP's branch, renders its manifests and compares them with the
cluster, applying nothing. For each object it asks the API server for a
server-side apply dry run of Git's version (field manager "pinbot") and
compares the result with the live object on exactly the fields Git's
manifest sets, as the dry run's managed fields list them. A field Git does
not set is never out of sync, whoever changed it; fields under the app's ignore
rules are left out. Objects Git declares that the cluster lacks are
Missing; objects carrying the app's inventory label that Git no longer
declares are Orphaned.

Each field out of sync prints as one line:

  Deployment web/web: spec.replicas git=3 live=1

As kubectl diff does, the command exits 0 when the cluster matches Git, 1
when it differs, and 2 when the diff could not be made (Git or the
cluster unreachable; stderr says which).

-o json prints {"app","commit","sync","fields":[{"object":{"group","kind",
"namespace","name"},"path","pointer","git","live"}],"missing":[...],
"orphaned":[...]}.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeApps(f),
		Annotations:       map[string]string{checkAnnotation: "in sync"},
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _, err := f.open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			d, err := r.Diff(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := output.Diff(cmd.OutOrStdout(), g.json(), d); err != nil {
				return err
			}
			if !d.InSync() {
				return &answer{fmt.Errorf("%s differs from Git at %s: %s", d.App, commitid.Short(d.Commit), output.DiffSummary(d))}
			}
			return nil
		},
	}
	f.bindReading(cmd)
	return cmd
}
