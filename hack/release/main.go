// Command release builds a pinbot release without Docker: `make release
// VERSION=vX.Y.Z` runs it. Into --out it writes static binaries for each
// platform, a CycloneDX SBOM of each (CycloneDX's cyclonedx-gomod, from the
// binary's Go build information), checksums.txt (SHA-256 of every file)
// and provenance.intoto.json, an in-toto statement of SLSA provenance v1
// naming the binaries, the commit and the command.
//
// With --image REGISTRY/REPO it also pushes two images: REPO:VERSION, the
// linux binaries on an empty base (as make image builds it), and
// REPO:VERSION-debug, the same with Debian's static busybox as a shell for
// a Jenkins container() step. Both carry OCI annotations and a provenance
// statement attached as an OCI 1.1 referrer. The digests are printed on
// stdout, one line each.
//
//	go run ./hack/release --version v0.3.0 [--out dist] [--image REGISTRY/REPO]
//	    [--platforms linux/amd64,...] [--busybox linux/amd64=/bin/busybox,...]
//	    [--ldflags FLAGS] [--source URL] [--insecure]
//
// SOURCE_DATE_EPOCH (seconds) is the images' creation time: make release
// sets the commit's time; unset, it is now.
package main

import (
	"context"
	"io"

	"pinbot.dev/pinbot/hack/internal/command"
)

func main() { command.Main("release", run) }

// run builds the release the args say.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	if err := o.resolve(ctx); err != nil {
		return err
	}
	r := &release{o: o, stdout: stdout, stderr: stderr}
	return r.build(ctx)
}
