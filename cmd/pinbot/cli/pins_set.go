package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/gctune"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/helmform"
)

// pinsSetOptions are the flags of `pinbot pins set`.
type pinsSetOptions struct {
	dir      string
	tag      string
	pinTags  bool
	anyVar   bool
	dryRun   bool
	vendored bool
}

// Validate checks the flags.
func (o *pinsSetOptions) Validate() error {
	if o.dir == "" {
		return usageErrorf("flag --dir: want a directory, got an empty string")
	}
	return nil
}

func newPinsSetCommand(g *globals) *cobra.Command {
	o := &pinsSetOptions{}
	cmd := &cobra.Command{
		Use:   "set IMAGE@sha256:DIGEST [--dir DIR] [--tag TAG] [--pin-tags] [--dry-run]",
		Short: "Rewrite every pin of a repository to a new digest",
		Long: `Rewrite every digest pin of IMAGE's repository under DIR (default: the
current directory) to DIGEST, changing only the digest's bytes. IMAGE is
matched after normalising, so nginx, docker.io/nginx and
index.docker.io/library/nginx are one repository; host and port matter.

Pins that carry a tag keep it, unless --tag gives a new one or IMAGE carries
one (repo:tag@sha256:...). A digest belongs to one tag variant (the suffix
after the version: 3.14.6-slim and 3.14.6-alpine differ, v1 and v2 do not):
when a tag is named, pins of other variants are skipped; when none is, pins
of several variants are refused (exit 1, nothing written) unless
--any-variant. --pin-tags also pins references that carry the named tag but
no digest; their tag never changes. In Helm values of a chart in the tree
(a Chart.yaml at or above the file), the chart is rendered with a probe
digest to learn the form that takes effect: a digest: key when the templates
read it, else tag: TAG@DIGEST when they render repository:tag, else none
("not pinned: chart X does not render a digest"). Values no chart in the
tree renders get a digest: key and are reported as unverified. Skipped pins
are listed, one line each.
Pins with a "# pinbot: ignore" comment are left alone.

The rewrite is all-or-nothing across files, even if pinbot is killed: every
file is staged first and committed through a journal (.pinbot-journal) that
the next run finishes. SIGINT or SIGTERM before the commit stops it with
nothing changed and exit code 1. A malformed YAML file that mentions IMAGE
stops it with the file and line; other malformed files, and files over
10 MiB, are skipped with a warning. node_modules/ and vendor/ are skipped
unless --include-vendored. --dry-run prints the changes and writes nothing.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, g, args[0])
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".", "directory holding the manifests")
	cmd.Flags().StringVar(&o.tag, "tag", "", "new tag to write where a pin carries one")
	cmd.Flags().BoolVar(&o.pinTags, "pin-tags", false, "also pin references that carry a tag but no digest")
	cmd.Flags().BoolVar(&o.anyVar, "any-variant", false, "with no tag named, set pins of every tag variant at once")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the changes without writing them")
	cmd.Flags().BoolVar(&o.vendored, "include-vendored", false, "also rewrite files under node_modules/ and vendor/, skipped by default")
	return cmd
}

// update builds the pins.Update for the IMAGE@sha256:DIGEST argument.
// Every error is a usage error: the command line is wrong, and no file has
// been read.
func (o *pinsSetOptions) update(arg string) (pins.Update, error) {
	shown := clip.Quote(arg)
	image, argTag, digest := imageref.Split(arg)
	if !strings.Contains(arg, "@") || image == "" {
		return pins.Update{}, usageErrorf("argument %s: want IMAGE@sha256:DIGEST", shown)
	}
	if o.tag != "" {
		if err := (pins.Update{Image: image, Digest: digest, Tag: o.tag}).Validate(); errors.Is(err, pins.ErrInvalidTag) {
			return pins.Update{}, usageErrorf("flag --tag %s: %w", clip.Quote(o.tag), pins.ErrInvalidTag)
		}
	}
	tag := o.tag
	if argTag != "" {
		if tag != "" && tag != argTag {
			return pins.Update{}, usageErrorf("flag --tag %s conflicts with tag %s in argument %s", clip.Quote(tag), clip.Quote(argTag), shown)
		}
		tag = argTag
	}
	u := pins.Update{Image: image, Digest: digest, Tag: tag, PinTags: o.pinTags, AnyVariant: o.anyVar}
	if err := u.Validate(); err != nil {
		if errors.Is(err, imageref.ErrInvalidDigest) {
			// The digest alone, not the whole (maybe huge) value.
			err = fmt.Errorf("digest %s: %w", clip.Quote(digest), imageref.ErrInvalidDigest)
		}
		return pins.Update{}, usageErrorf("argument %s: %w", shown, err)
	}
	return u, nil
}

// run sets the pins and prints what changed.
func (o *pinsSetOptions) run(cmd *cobra.Command, g *globals, arg string) error {
	if err := o.Validate(); err != nil {
		return err
	}
	defer gctune.Batch()()
	u, err := o.update(arg)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var opts []pins.Option
	if o.vendored {
		opts = append(opts, pins.WithVendored())
	}
	// A Helm pin must change what the chart renders: render it to learn
	// the form that does.
	var unverified []string
	if u.PinTags {
		if unverified, err = helmform.FormsIn(ctx, o.dir, &u, opts...); err != nil {
			return err
		}
	}
	opts = append(opts, pinsWarnings(logctx.From(ctx)), pauseHook(ctx, cmd.ErrOrStderr()))
	var skipped []pins.Skip
	opts = append(opts, pins.WithSkipped(func(s pins.Skip) { skipped = append(skipped, s) }))
	var changes []pins.Change
	if o.dryRun {
		changes, err = pins.Plan(o.dir, u, opts...)
	} else {
		changes, err = pins.SetContext(ctx, o.dir, u, opts...)
	}
	if errors.Is(err, pins.ErrMixedVariants) {
		return fmt.Errorf("%w (name the tag as IMAGE:TAG@DIGEST or with --tag, or pass --any-variant)", err)
	}
	if err != nil {
		return err
	}
	return output.PinsSet(cmd.OutOrStdout(), g.json(), u, o.dryRun, changes, skipped, unverified)
}
