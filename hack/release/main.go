// Command release builds a pinbot release without Docker: `make release
// VERSION=vX.Y.Z [REGISTRY=host/org] [SIGNING_KEY=cosign.key]` runs it.
// Into --out it writes:
//
//   - pinbot_VERSION_OS_ARCH.tar.gz per platform: the static binary,
//     LICENSE, README.md and the bash, zsh and fish completions;
//   - pinbot_VERSION_OS_ARCH.cdx.json, the CycloneDX SBOM of each binary
//     (CycloneDX's cyclonedx-gomod, from its Go build information);
//   - pinbot-CHART_VERSION.tgz, the Helm chart at the release's version;
//   - provenance.intoto.json, an in-toto statement of SLSA provenance v1
//     naming those files, the commit and the command;
//   - checksums.txt (SHA-256 of every file) and, with --key,
//     checksums.txt.sigstore.json (its cosign bundle) and cosign.pub.
//
// With --registry REGISTRY/ORG it first pushes two images: ORG/pinbot:VERSION,
// the linux binaries on an empty base (as make image builds it), and
// ORG/pinbot:VERSION-debug, the same with a shell the release compiles
// from hack/debugshell (no host package), for a Jenkins container() step.
// Both carry OCI annotations and their provenance as an OCI 1.1 referrer.
// The chart, whose values then pin both images by digest, is pushed to
// oci://REGISTRY/ORG/charts/pinbot:CHART_VERSION as helm push does. With
// --key, the images and the chart are signed as cosign sign --key does,
// and the provenance is a signed attestation: cosign verify --key
// cosign.pub --insecure-ignore-tlog checks each. stdout gets the images'
// and the chart's digest references, one a line.
//
//	go run ./hack/release --version v0.5.0 [--out dist] [--registry REGISTRY/ORG]
//	    [--key cosign.key] [--platforms linux/amd64,...] [--ldflags FLAGS]
//	    [--source URL] [--insecure]
//
// SOURCE_DATE_EPOCH (seconds) is the images' creation time and every
// archived file's: make release sets the commit's time; unset, it is now.
package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"pinbot.dev/pinbot/hack/internal/command"
)

func main() { command.Main("release", run) }

// run builds the release the args say.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(o.out)
	if err := o.resolve(ctx); err != nil {
		return err
	}
	r := &release{o: o, stdout: stdout, stderr: stderr}
	if err := r.build(ctx); err != nil {
		// --out was empty or absent (resolve checked): a failed run leaves
		// it so, and the next run needs no rm -rf. What it pushed stays in
		// the registry, unreferenced by any release.
		if os.IsNotExist(statErr) {
			os.RemoveAll(o.out)
		} else if entries, rerr := os.ReadDir(o.out); rerr == nil {
			for _, e := range entries {
				os.RemoveAll(filepath.Join(o.out, e.Name()))
			}
		}
		return err
	}
	return nil
}
