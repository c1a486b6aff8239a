// Command image builds pinbot's own multi-platform image without Docker and
// pushes it: `make image IMAGE=registry/repo:tag` runs it. It compiles a
// static pinbot for each platform, assembles an OCI index on empty bases
// with hack/image/imagebuild, pushes it with the docker config's
// credentials, prints the index's digest reference (registry/repo@sha256:…)
// alone on stdout, and then, with --pin-with, rewrites deploy/'s pin of the
// image to that digest with `pinbot pins set`.
//
//	go run ./hack/image --image REGISTRY/REPO:TAG [--version V] [--source URL]
//	    [--ldflags FLAGS] [--platforms linux/amd64,linux/arm64]
//	    [--ca-bundle FILE] [--insecure] [--pin-with PINBOT --pin-dir deploy [--pin-repo REPO]]
//
// SOURCE_DATE_EPOCH (seconds) is the images' creation time and every file's
// modification time; unset, it is 0. The same source, flags and
// SOURCE_DATE_EPOCH give the same digest.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"pinbot.dev/pinbot/hack/internal/command"
)

func main() { command.Main("image", run) }

// run builds, pushes and pins the image as the command line args say.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	if err := o.resolve(ctx); err != nil {
		return err
	}
	// Checked again when the index is built; here it fails before the
	// minutes of compiling.
	if _, err := os.Stat(o.caBundle); err != nil {
		return fmt.Errorf("reading the CA bundle %s: %w", o.caBundle, err)
	}
	if o.pinWith != "" {
		if err := checkPin(ctx, o); err != nil {
			return err
		}
	}
	out, err := os.MkdirTemp("", "pinbot-image-")
	if err != nil {
		return fmt.Errorf("making the build directory: %w", err)
	}
	defer os.RemoveAll(out)
	bins, err := compile(ctx, o, out, stderr)
	if err != nil {
		return err
	}
	return publish(ctx, o, bins, stdout, stderr)
}
