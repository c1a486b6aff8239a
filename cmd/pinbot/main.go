// Command pinbot promotes image digests into a manifest repository through
// Gitea pull requests, and proves after the merge that the cluster runs them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
