package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/reconciler"
)

func newVerifyCommand(g *globals) *cobra.Command {
	f := &reconcilerFlags{}
	cmd := &cobra.Command{
		Use:   "verify APP --config FILE",
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

-o json prints {"app","commit","verified","containers":[{"namespace","pod",
"container","git_digest","running_digest","verdict",...}],...}.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _, err := f.open(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			v, err := r.Verify(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json() {
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(v); err != nil {
					return err
				}
			} else if err := writeVerification(cmd.OutOrStdout(), v); err != nil {
				return err
			}
			if !v.Verified {
				return fmt.Errorf("%s is not verified: %s", v.App, v.Summary())
			}
			return nil
		},
	}
	f.bind(cmd)
	return cmd
}

// writeVerification prints the verdict line and per-container tables.
func writeVerification(w io.Writer, v *reconciler.Verification) error {
	verdict := "NOT VERIFIED"
	if v.Verified {
		verdict = "VERIFIED"
	}
	fmt.Fprintf(w, "%s at %s: %s: %s\n", v.App, abbrev(v.Commit, 12), verdict, v.Summary())
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "  %s\n", r)
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

func writeContainers(w io.Writer, cs []reconciler.ContainerVerdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tGIT DIGEST\tRUNNING DIGEST\tVERDICT\tREASON")
	for _, c := range cs {
		name := c.Container
		if c.Init {
			name += " (init)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Pod, name,
			abbrevDigest(c.GitDigest), abbrevDigest(c.RunningDigest), c.Verdict, c.Reason)
	}
	return tw.Flush()
}

// abbrevDigest abbreviates "sha256:<64 hex>" to "sha256:<12 hex>"; "-" for
// none.
func abbrevDigest(d string) string {
	if d == "" {
		return "-"
	}
	return abbrev(d, len("sha256:")+12)
}

func abbrev(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
