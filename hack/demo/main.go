// Command demo runs pinbot's whole job on this machine with nothing
// configured: a real Gitea with its container registry, a manifest
// repository pinned to v1, a CI build of v2 that writes a Kaniko digest
// file, `pinbot promote`, a moved tag caught by `pinbot drift`, the merge a
// reviewer would make, and the reconciler proving on a real kube-apiserver
// that the running Pods use the merged digest; then a release chain:
// staging proven, prod's pull request opened by pinbot with the proof, a
// bad prod release rolled back and held.
//
// It ends with `pinbot serve` running and its dashboard's URL printed,
// until Ctrl-C (PINBOT_DEMO_SERVE=0 or --no-serve ends the demo there
// instead, for scripts and CI). It stops everything it started on exit.
// `make demo` builds pinbot and this command first, and Gitea and the
// control plane in the background: the demo's first step, pinbot on a
// checkout, needs neither, and the later steps wait for their builds
// (see waitForBuild).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %s\n", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	d, err := newDemo(ctx)
	defer d.close()
	if err != nil {
		return err
	}
	for _, step := range []func(context.Context) error{
		d.offline, // offline.go: while Gitea builds
		d.startGitea,
		d.seed,
		d.promote,
		d.drift,
		d.mergeAndReconcile,
		d.argoCD,       // argocd.go
		d.releaseChain, // release.go
		d.serve,        // last: it runs until Ctrl-C
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	fmt.Println("\nDone. Everything the demo started has been stopped.")
	return nil
}
