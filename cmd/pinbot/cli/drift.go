package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"

	"pinbot.dev/pinbot/internal/imageref"
)

// driftOptions are the flags of `pinbot drift`.
type driftOptions struct {
	forge       forgeFlags
	gate        gateFlags
	policy      policyFlag
	minAge      time.Duration
	group       string
	stateFile   string
	schedule    string
	concurrency int
}

// Validate checks the flags; its errors are usage errors.
func (o *driftOptions) Validate(cmd *cobra.Command) error {
	if err := o.forge.Validate(); err != nil {
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
	o.forge.bind(cmd)
	o.gate.bind(cmd)
	o.policy.bind(cmd)
	return cmd
}

func (o *driftOptions) run(cmd *cobra.Command, g *globals) error {
	defer leanGC()()
	ctx := cmd.Context()
	defer logMemory(ctx)
	env, err := o.forge.env(ctx)
	if err != nil {
		return err
	}
	gate, err := o.gate.gate(env.Repo.String())
	if err != nil {
		return err
	}
	floor, err := o.policy.verifier()
	if err != nil {
		return err
	}
	opts := promote.DriftOptions{
		Group:       promote.Group(o.group),
		Concurrency: o.concurrency,
		Choose:      o.forge.choose(),
		DryRun:      o.forge.dryRun,
		Gate:        gate,
		Policy:      floor,
	}
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
	return promote.Schedule(ctx, o.schedule, func(ctx context.Context) {
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
	var err error
	if g.json() {
		err = writeDriftJSON(w, rep, o.forge.dryRun)
	} else {
		err = writeDriftText(w, rep)
	}
	if err != nil {
		return err
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("drift: %d of %d failed: %w", len(rep.Failed), rep.Checked, rep.Err())
	}
	return nil
}

type trackedJSON struct {
	Image   string   `json:"image"`
	Tag     string   `json:"tag"`
	Digest  string   `json:"digest"`
	Age     string   `json:"age,omitempty"`
	Targets []string `json:"targets"`
}

type failureJSON struct {
	Image  string `json:"image,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Branch string `json:"branch,omitempty"`
	Error  string `json:"error"`
}

func writeDriftJSON(w io.Writer, rep promote.DriftReport, withText bool) error {
	tracked := func(ts []promote.Tracked) []trackedJSON {
		out := []trackedJSON{}
		for _, t := range ts {
			j := trackedJSON{Image: t.Image, Tag: t.Tag, Digest: t.Digest, Targets: t.Targets}
			if t.AgeKnown {
				j.Age = t.Age.Round(time.Second).String()
			}
			out = append(out, j)
		}
		return out
	}
	out := struct {
		Checked int           `json:"checked"`
		Moved   []trackedJSON `json:"moved"`
		Held    []trackedJSON `json:"held"`
		Failed  []failureJSON `json:"failed"`
		Results []resultJSON  `json:"results"`
		Summary string        `json:"summary"`
	}{Checked: rep.Checked, Moved: tracked(rep.Moved), Held: tracked(rep.Held), Failed: []failureJSON{}, Results: []resultJSON{}, Summary: rep.Summary()}
	for _, f := range rep.Failed {
		out.Failed = append(out.Failed, failureJSON{Image: f.Image, Tag: f.Tag, Branch: f.Branch, Error: redact.String(f.Error())})
	}
	for _, r := range rep.Results {
		out.Results = append(out.Results, toJSON(r, withText))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeDriftText(w io.Writer, rep promote.DriftReport) error {
	for _, r := range rep.Results {
		line := fmt.Sprintf("%-14s %s", r.Status, r.Branch)
		switch {
		case r.Closed != nil:
			line += fmt.Sprintf(" (closed obsolete #%d)", r.Closed.Number)
		case r.Pull != nil:
			line += " " + r.Pull.URL
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
		if r.Status == promote.StatusDryRun {
			if _, err := fmt.Fprintf(w, "%s\n", r.Diff); err != nil {
				return err
			}
		}
		for _, n := range r.Notes {
			if _, err := fmt.Fprintf(w, "  note: %s\n", n); err != nil {
				return err
			}
		}
	}
	for _, h := range rep.Held {
		age := "unknown age"
		if h.AgeKnown {
			age = h.Age.Round(time.Second).String() + " old"
		}
		if _, err := fmt.Fprintf(w, "%-14s %s:%s -> %s (%s)\n", "held", h.Image, h.Tag, imageref.Short(h.Digest), age); err != nil {
			return err
		}
	}
	for _, f := range rep.Failed {
		if _, err := fmt.Fprintf(w, "%-14s %s\n", "failed", redact.String(f.Error())); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, rep.Summary())
	return err
}
