package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/dashboard"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/status"
)

// statusOptions are the flags of `pinbot status` besides the shared ones.
type statusOptions struct {
	cached      bool
	server      string
	serverToken string
	// insecureServer allows a plain-HTTP --server off loopback.
	insecureServer bool
}

func newStatusCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [APP] [--config FILE | -n NAMESPACE]",
		Short: "Show each app's sync status, health and verification",
		Long: `Status answers, per app, two separate questions and a proof: sync (does the
cluster hold what the branch head declares? Synced or OutOfSync), health
(Healthy, Progressing, Degraded or Missing, from kstatus and the Pods), and
verification (do the current Pods run the digests Git pins?).

By default it computes them now: it fetches Git and reads the cluster,
applying nothing. --cached instead prints the status the reconcile loop
last stored in the cluster, without touching Git.

With APP, -o json prints one object; without, a list. The command exits 1
when a status could not be computed (Git, render or cluster failing).`,
		Args:              maxArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.server != "" {
				token, err := credential("--server-token-file", o.serverToken, readTokenEnv)
				if err != nil {
					return err
				}
				return serverStatus(cmd.Context(), cmd.OutOrStdout(), g, o.server, o.insecureServer, token, strings.Join(args, ""))
			}
			open := f.open
			if o.cached {
				open = f.openReading // the stored status needs no forge
			}
			r, cfg, err := open(cmd.Context(), args...)
			if err != nil {
				return err
			}
			defer r.Close()
			names := args
			if len(names) == 0 {
				for _, a := range cfg.Apps {
					names = append(names, a.Name)
				}
			}
			var statuses []*status.App
			var errs []error
			for _, n := range names {
				s, err := appStatus(cmd, r, n, o.cached)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", n, err))
				}
				if s != nil {
					statuses = append(statuses, s)
				}
			}
			if err := output.AppStatuses(cmd.OutOrStdout(), g.json(), statuses, len(args) == 1); err != nil {
				return err
			}
			return errors.Join(errs...)
		},
	}
	f.bindReading(cmd)
	cmd.Flags().BoolVar(&o.cached, "cached", false, "print the status the reconcile loop stored, without fetching Git")
	cmd.Flags().StringVar(&o.server, "server", "", "read the status from a running pinbot serve at this URL, through its JSON API")
	cmd.Flags().StringVar(&o.serverToken, "server-token-file", "", "file holding the bearer token of --server's dashboard (default $"+readTokenEnv+")")
	cmd.Flags().BoolVar(&o.insecureServer, "insecure-server", false,
		"allow a plain-HTTP --server that is not loopback (the token then crosses the network in clear)")
	return cmd
}

func appStatus(cmd *cobra.Command, r *reconciler.Reconciler, name string, cached bool) (*status.App, error) {
	if cached {
		return r.StoredStatus(cmd.Context(), name)
	}
	s, _, err := r.Status(cmd.Context(), name)
	return s, err
}

// serverStatus reads the apps (or app, when not "") from the JSON API of
// a running pinbot serve at base and prints them: -o json and yaml the
// API's documents, text a line each.
func serverStatus(ctx context.Context, w io.Writer, g *globals, base string, insecure bool, token, app string) error {
	u, err := loopback.CheckURL(base, insecure)
	if err != nil {
		return usageErrorf("flag --server %s: %w (the http(s) URL of pinbot serve; --insecure-server allows plain HTTP)", clip.Quote(redact.URL(base)), err)
	}
	apps, err := dashboard.Fetch(ctx, u, token, app)
	if err != nil {
		return err
	}
	return output.ServerApps(w, g.json(), app != "", apps)
}
