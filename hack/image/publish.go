package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imagebuild"
)

// compile builds the binaries into dir.
func compile(ctx context.Context, o *options, dir string, stderr io.Writer) ([]imagebuild.Binary, error) {
	fmt.Fprintf(stderr, ">> compiling pinbot %s for %s\n", o.version, platformList(o))
	return imagebuild.Compile(ctx, imagebuild.CompileOptions{
		Go: o.goCmd, Dir: o.dir, Platforms: o.platforms, LDFlags: o.ldflags, OutDir: dir, Stderr: stderr,
	})
}

// publish assembles the index of bins, pushes it, prints its digest
// reference on stdout and, with --pin-with, rewrites the pins.
func publish(ctx context.Context, o *options, bins []imagebuild.Binary, stdout, stderr io.Writer, remoteOpts ...remote.Option) error {
	idx, err := imagebuild.Index(imagebuild.Options{
		Binaries: bins,
		CABundle: o.caBundle,
		Labels:   imagebuild.Labels(o.revision, o.source, o.version),
		Created:  o.created,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, ">> pushing %s\n", o.image)
	if len(remoteOpts) == 0 {
		remoteOpts = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	}
	ref, err := imagebuild.Push(ctx, o.image, idx, remoteOpts...)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, ref.String()); err != nil {
		return err
	}
	if o.pinWith == "" {
		return nil
	}
	return pin(ctx, o, ref.DigestStr(), stderr)
}

// platformList names the platforms to build.
func platformList(o *options) string {
	names := make([]string, len(o.platforms))
	for i, p := range o.platforms {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

// listedPin is one row of `pinbot pins list -o json`.
type listedPin struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Image string `json:"image"`
}

// checkPin makes sure, before anything is built, that --pin-dir pins the
// repository the digest will be written for: `pins set` of a repository
// nothing pins changes nothing, and says so only in passing.
func checkPin(ctx context.Context, o *options) error {
	cmd := exec.CommandContext(ctx, o.pinWith, "pins", "list", "--dir", o.pinDir, "-o", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("listing the pins under %s with %s: %w: %s", o.pinDir, o.pinWith, err, strings.TrimSpace(stderr.String()))
	}
	var pins []listedPin
	if err := json.Unmarshal(out, &pins); err != nil {
		return fmt.Errorf("reading `%s pins list -o json`: %w", o.pinWith, err)
	}
	var others []string
	for _, p := range pins {
		repo, err := name.NewRepository(p.Image)
		if err == nil && repo.Name() == o.pinRepo.Name() {
			return nil
		}
		others = append(others, fmt.Sprintf("%s (%s:%d)", p.Image, p.File, p.Line))
	}
	slices.Sort(others)
	pinned := "no image at all"
	if len(others) > 0 {
		pinned = "only " + strings.Join(slices.Compact(others), ", ")
	}
	return fmt.Errorf("%s pins no image of %s, %s: set newName in %s/kustomization.yaml's images: to %s, or name the repository it pins with --pin-repo (make image PIN_REPO=...): %w",
		o.pinDir, o.pinRepo, pinned, o.pinDir, o.pinRepo, errNoPin)
}

// pin rewrites the pins of the image under --pin-dir to digest, and their
// tags to the image's, with `pinbot pins set`, whose report goes to stderr.
func pin(ctx context.Context, o *options, digest string, stderr io.Writer) error {
	arg := o.pinRepo.Tag(o.image.TagStr()).String() + "@" + digest
	fmt.Fprintf(stderr, ">> pinning %s under %s\n", arg, o.pinDir)
	cmd := exec.CommandContext(ctx, o.pinWith, "pins", "set", arg, "--dir", o.pinDir, "-o", "json")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pinning %s under %s: %w", arg, o.pinDir, err)
	}
	// A pin of another tag variant is left alone by pins set and reported
	// as skipped; pinbot's own deploy/ must move whole, so that is an error.
	var report struct {
		Skipped []struct {
			File   string `json:"file"`
			Line   int    `json:"line"`
			Reason string `json:"reason"`
		} `json:"skipped"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		return fmt.Errorf("reading `%s pins set -o json`: %w", o.pinWith, err)
	}
	if len(report.Skipped) > 0 {
		s := report.Skipped[0]
		return fmt.Errorf("pinning %s under %s: %s:%d was left alone (%s); tag the image in the variant deploy/ pins, or edit its newTag first",
			arg, o.pinDir, s.File, s.Line, s.Reason)
	}
	fmt.Fprint(stderr, out.String())
	return nil
}
