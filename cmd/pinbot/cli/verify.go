package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func newVerifyCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	var report bool
	cmd := &cobra.Command{
		Use:   "verify APP --config FILE [--report]",
		Short: "Prove that APP's running Pods run the image digests Git pins; exit 1 unless they all do",
		Long: `Verify fetches APP's branch, renders its manifests and compares, for every
container of every Pod of each workload's current revision (init containers
included), the runtime's status imageID with the digest Git pins. Accepted:
repo@sha256:X, docker-pullable://repo@sha256:X, a bare sha256:<config
digest> resolved through the registry for the Node's platform, and the
Node's platform child of a pinned index.

Each container gets a verdict: Verified, Mismatch, Pending or Unknown. Pods
of older revisions (still terminating, or kept by a stuck rollout) are listed
apart and do not count. The command exits 1 unless every current Pod is
Verified and each workload has all its Pods.

A verify-only app (argocd: or flux: in the config) is deployed by Argo CD
or Flux: pinbot reads the Application or Kustomization (read-only), renders
the head of the branch it tracks, and verifies the workloads the deployer
applied against the head's digests. While the deployer has not reached the
head, a container that runs the deployed revision's digest is Pending
("Argo CD has not synced <head> yet", "Flux has not applied <head> yet"),
one that runs neither is Mismatch, and the app is not verified.

--report (verify-only apps) posts the result once on the head commit: the
Gitea commit status pinbot/APP, pending while the deployer is behind,
success when verified, failure on a mismatch; on success, the per-Pod proof
as a comment on the merged promotion pull request. A state already posted
is not posted again.

-o json prints {"app","commit","verified","containers":[{"namespace","pod",
"container","gitDigest","runningDigest","verdict",...}],...,"source",
"deployedCommit","headCommit"}: commit is the head verified against,
source is pinbot, argocd or flux, and deployedCommit what the deployer
last deployed (for pinbot's own apps, the last commit pinbot synced).`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _, err := f.open(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			var s *status.App
			var v *verdict.Verification
			if report {
				s, v, err = r.Report(cmd.Context(), args[0])
			} else {
				s, v, err = r.Status(cmd.Context(), args[0])
			}
			if err == nil && v == nil {
				err = fmt.Errorf("%s: nothing verified: %s", args[0], s.Error)
			}
			if err != nil {
				return err
			}
			if g.json() {
				out := verifyOutput{Verification: v, Source: s.Source, DeployedCommit: s.DeployedCommit, HeadCommit: s.HeadCommit}
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(out); err != nil {
					return err
				}
			} else if err := writeVerification(cmd.OutOrStdout(), s, v); err != nil {
				return err
			}
			if !v.Verified {
				return fmt.Errorf("%s is not verified: %s", v.App, v.Summary())
			}
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().BoolVar(&report, "report", false, "post the result on the head commit (verify-only apps): commit status pinbot/APP and, once verified, the proof on the promotion pull request")
	return cmd
}

// verifyOutput is verify -o json: the verification's keys, and who
// deployed what.
type verifyOutput struct {
	*verdict.Verification
	Source         string `json:"source"`
	DeployedCommit string `json:"deployedCommit"`
	HeadCommit     string `json:"headCommit"`
}

// writeVerification prints the verdict line and per-container tables.
func writeVerification(w io.Writer, s *status.App, v *verdict.Verification) error {
	verdict := "NOT VERIFIED"
	if v.Verified {
		verdict = "VERIFIED"
	}
	fmt.Fprintf(w, "%s at %s: %s: %s\n", v.App, commitid.Short(v.Commit), verdict, v.Summary())
	if s.Source != "" && s.Source != "pinbot" {
		fmt.Fprintf(w, "  deployed by %s at %s (sync %s, health %s)\n", deployer.Kind(s.Source).Title(), orDash(commitid.Short(s.DeployedCommit)), s.Sync, s.Health)
	}
	for _, r := range v.Reasons {
		if r != v.Summary() { // the verdict line says it already
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
	if len(v.Containers) > 0 {
		fmt.Fprintln(w)
		if err := writeContainers(w, v.Containers); err != nil {
			return err
		}
	}
	if len(v.OldRevisions) > 0 {
		fmt.Fprintln(w, "\nOlder revisions (not counted):")
		return writeContainers(w, v.OldRevisions)
	}
	return nil
}

func writeContainers(w io.Writer, cs []verdict.ContainerVerdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tGIT DIGEST\tRUNNING DIGEST\tVERDICT\tREASON")
	for _, c := range cs {
		name := c.Container
		if c.Init {
			name += " (init)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Pod, name,
			orDash(imageref.Short(c.GitDigest)), orDash(imageref.Short(c.RunningDigest)), c.Verdict, c.Reason)
	}
	return tw.Flush()
}
