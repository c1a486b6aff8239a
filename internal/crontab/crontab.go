// Package crontab runs a job on a cron schedule, one run at a time.
package crontab

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/robfig/cron/v3"

	"pinbot.dev/pinbot/internal/logctx"
)

// Run calls run on the cron schedule spec (five fields, or
// descriptors such as "@every 10m" and "@hourly") until ctx ends. Runs
// never overlap: a run still going when the next is due makes that one
// skip. It returns when ctx ends and the run in progress, if any, has
// finished; an error only for a bad spec.
func Run(ctx context.Context, spec string, run func(ctx context.Context)) error {
	log := logctx.From(ctx)
	cl := cronLogger{log}
	c := cron.New(cron.WithLogger(cl), cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)))
	if _, err := c.AddFunc(spec, func() { run(ctx) }); err != nil {
		return fmt.Errorf("schedule %q: %w", spec, err)
	}
	c.Start()
	log.Info("scheduled", "schedule", spec, "next", c.Entries()[0].Next.String())
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

// cronLogger adapts slog to cron's logger.
type cronLogger struct{ log *slog.Logger }

// Info logs cron's routine messages at debug level.
func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }

// Error logs cron's errors.
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "error", err.Error())...)
}
