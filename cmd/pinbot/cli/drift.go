package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/flags"
	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/crontab"
	"pinbot.dev/pinbot/internal/gctune"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
)

// driftOptions are the flags of `pinbot drift`.
type driftOptions struct {
	flags.Publish
	minAge      time.Duration
	group       string
	stateFile   string
	schedule    string
	concurrency int
}

// Validate checks the flags; its errors are usage errors.
func (o *driftOptions) Validate(cmd *cobra.Command) error {
	if err := o.Forge.Validate(); err != nil {
		return err
	}
	switch promote.Group(o.group) {
	case "", promote.GroupImage, promote.GroupTarget, promote.GroupAll:
	default:
		return usageErrorf("flag --group %s: want image, target or all", clip.Quote(o.group))
	}
	if cmd.Flags().Changed("min-age") && o.minAge < 0 {
		return usageErrorf("flag --min-age must not be negative")
	}
	if o.concurrency < 1 {
		return usageErrorf("flag --concurrency must be at least 1")
	}
	if o.schedule != "" {
		if _, err := cron.ParseStandard(o.schedule); err != nil {
			return usageErrorf("flag --schedule %s: %w", clip.Quote(o.schedule), err)
		}
	}
	return nil
}

func newDriftCommand(g *globals) *cobra.Command {
	o := &driftOptions{}
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "Promote the tracked tags that moved, through the same pull requests as promote",
		Long: `Find every pin that follows a tag (repo:tag@sha256:..., a Helm tag or
kustomize newTag next to the digest, or a track entry of .pinbot.yaml for
digest-only pins), resolve each distinct repo:tag once, and promote the tags
that moved: one pull request per image per target by default (--group, or
drift.group in .pinbot.yaml).

--min-age holds back a digest younger than the window. Age is the time since
drift first saw the digest behind its tag, remembered in --state-file (and
in memory under --schedule); without a state it falls back to the image's
created time, which builds set (reproducible builds set it to the epoch).

A registry failure for one image is reported and the others go on; the exit
code is 1 when any failed. Without --schedule drift runs once (a Kubernetes
CronJob, a Jenkins stage); with --schedule "CRON" it keeps running, never
overlapping runs, and logs a one-line summary per run.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return redact.Error(o.run(cmd, g))
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&o.minAge, "min-age", 0, "hold back digests younger than this, e.g. 30m (default: drift.minAge of .pinbot.yaml, else 0)")
	fl.StringVar(&o.group, "group", "", "what one pull request holds: image, target or all (default: drift.group of .pinbot.yaml, else image)")
	fl.StringVar(&o.stateFile, "state-file", "", "JSON file remembering when each digest was first seen (measures --min-age)")
	fl.StringVar(&o.schedule, "schedule", "", `keep running on this cron schedule, e.g. "*/10 * * * *" or "@every 5m"`)
	fl.IntVar(&o.concurrency, "concurrency", promote.DefaultConcurrency, "tags resolved at once")
	o.Publish.Bind(cmd)
	return cmd
}

func (o *driftOptions) run(cmd *cobra.Command, g *globals) error {
	defer gctune.Lean()()
	ctx := cmd.Context()
	defer gctune.LogMemory(ctx)
	env, gate, floor, err := o.Open(ctx)
	if err != nil {
		return err
	}
	opts := promote.DriftOptions{Group: promote.Group(o.group), Concurrency: o.concurrency, Choose: o.Forge.Choose(),
		DryRun: o.Forge.DryRun(), Admitter: gate, Policy: floor}
	if cmd.Flags().Changed("min-age") {
		opts.MinAge = &o.minAge
	}
	switch {
	case o.stateFile != "":
		if opts.State, err = promote.LoadState(o.stateFile); err != nil {
			return err
		}
	case o.schedule != "":
		opts.State = promote.NewState() // first-seen times live as long as the process
	}
	if o.schedule == "" {
		rep, err := promote.Drift(ctx, env, opts)
		if err != nil {
			return err
		}
		return o.report(cmd.OutOrStdout(), g, rep)
	}
	log := logctx.From(ctx)
	return crontab.Run(ctx, o.schedule, func(ctx context.Context) {
		rep, err := promote.Drift(ctx, env, opts)
		if err != nil {
			log.Error("drift run failed", "error", redact.String(err.Error()))
			return
		}
		for _, f := range rep.Failed {
			log.Warn("drift failure", "image", f.Image, "tag", f.Tag, "branch", f.Branch, "error", redact.String(f.Error()))
		}
		log.Info(rep.Summary())
	})
}

// report prints one run's outcome and returns an error when anything
// failed (exit code 1).
func (o *driftOptions) report(w io.Writer, g *globals, rep promote.DriftReport) error {
	if err := output.Drift(w, g.json(), o.Forge.DryRun(), rep); err != nil {
		return err
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("drift: %d of %d failed: %w", len(rep.Failed), rep.Checked, rep.Err())
	}
	return nil
}
