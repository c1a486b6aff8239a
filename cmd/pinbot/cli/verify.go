package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
)

func newVerifyCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	var report, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "verify APP [--config FILE | -n NAMESPACE] [--wait [--timeout 5m]] [--report]",
		Short: "Prove that APP's running Pods run the image digests Git pins; exit 1 unless they all do",
		Long: `Verify fetches APP's branch, renders its manifests and compares, for every
container of every Pod of each workload's current revision (init containers
included), the runtime's status imageID with the digest Git pins. Accepted:
repo@sha256:X, docker-pullable://repo@sha256:X, a bare sha256:<config
digest> resolved through the registry for the Node's platform, and the
Node's platform child of a pinned index.

Each container gets a verdict: Verified, Mismatch, Pending or Unknown. Pods
of older revisions (still terminating, or kept by a stuck rollout) are listed
apart and do not count. The command exits 0 when every current Pod is
Verified and each workload has all its Pods, 1 when not, and 2 when the
proof could not be made (Git, render or the cluster failing).

A verify-only app (argocd: or flux: in the config) is deployed by Argo CD
or Flux: pinbot reads the Application or Kustomization (read-only), renders
the head of the branch it tracks, and verifies the workloads the deployer
applied against the head's digests. While the deployer has not reached the
head, a container that runs the deployed revision's digest is Pending
("Argo CD has not synced <head> yet", "Flux has not applied <head> yet"),
one that runs neither is Mismatch, and the app is not verified.

--wait proves again at each change of the Pods until verified or
--timeout passes (a rollout, or Argo CD or Flux reaching the head).

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
		Annotations:       map[string]string{checkAnnotation: "verified"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 || cmd.Flags().Changed("timeout") && !wait {
				return usageErrorf("flag --timeout: want a positive duration, with --wait")
			}
			r, _, err := f.open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if !wait {
				timeout = 0 // prove once
			}
			s, v, err := r.Await(cmd.Context(), args[0], timeout, report)
			if err == nil && v == nil {
				err = fmt.Errorf("%s: nothing verified: %s", args[0], s.Error)
			}
			if err != nil {
				return err
			}
			if err := output.Verify(cmd.OutOrStdout(), g.json(), s, v); err != nil {
				return err
			}
			if !v.Verified {
				return &answer{fmt.Errorf("%s is not verified: %s", v.App, v.Summary())}
			}
			return nil
		},
	}
	f.bindReading(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "prove again, at each change of the app's Pods, until verified or --timeout passes (as kubectl rollout status waits)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait, how long to wait for the proof")
	cmd.Flags().BoolVar(&report, "report", false, "post the result on the head commit (verify-only apps): commit status pinbot/APP and, once verified, the proof on the promotion pull request")
	return cmd
}
