package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/reconciler/history"
)

func newHistoryCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	cmd := &cobra.Command{
		Use:   "history APP --config FILE",
		Short: "Show APP's last syncs: commit, time, result, health and the digests verified",
		Long: `History prints the last 10 syncs of APP, newest first, as the reconciler
keeps them in the ConfigMap pinbot-app-<APP> of its stateNamespace: the
commit, when and how it was synced (auto or manual), the result (Applied,
Failed or Refused, with the reason), the health, and once verified the
digests the Pods run. -o json prints {"status":{...},"entries":[...]}.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _, err := f.openReading(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			rec, err := r.History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json() {
				if rec.Entries == nil {
					rec.Entries = []history.Entry{}
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rec)
			}
			return writeHistory(cmd.OutOrStdout(), args[0], rec)
		},
	}
	f.bind(cmd)
	return cmd
}

func writeHistory(w io.Writer, app string, rec *history.Record) error {
	if len(rec.Entries) == 0 {
		_, err := fmt.Fprintf(w, "%s has no syncs recorded\n", app)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCOMMIT\tTRIGGER\tRESULT\tHEALTH\tVERIFIED\tDETAIL")
	for _, e := range rec.Entries {
		detail := e.Summary
		if e.Reason != "" {
			detail = e.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\n", e.Time.UTC().Format(time.RFC3339), commitid.Short(e.Commit),
			e.Trigger, e.Result, orDash(string(e.Health)), e.Verified, detail)
	}
	return tw.Flush()
}
