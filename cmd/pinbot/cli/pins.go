package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
)

func newPinsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "List and set image digest pins in a manifest tree",
		Long: `Find image digest pins in Kubernetes manifests, kustomizations, Helm values,
Dockerfiles and pins files, and rewrite them in place: only the digest
(and, when asked, the tag) changes; every other byte of a file stays as it was.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPinsListCommand(g), newPinsSetCommand(g))
	return cmd
}

// pinsWarnings logs the files pins skipped, such as malformed YAML that
// does not concern the command, at warning level.
func pinsWarnings(logger *slog.Logger) pins.Option {
	return pins.WithWarnings(func(file string, err error) {
		logger.Warn("skipped file", "file", file, "reason", err.Error())
	})
}

// batchGC makes the garbage collector lazier for the rest of a pins
// command: listing or setting pins is a short batch job over many small
// files, and collecting every few megabytes of garbage cost it a fifth of
// its time. The live heap is small, so the peak grows by a few megabytes.
// A GOGC the user set wins. It returns a func restoring the setting, for
// tests that run commands in one process.
func batchGC() (restore func()) { return setGC(400) }

// leanGC makes the garbage collector keener for the rest of a promote or
// drift run: it waits on the network, not the CPU, so collecting twice as
// often costs nothing measurable (a few milliseconds), and keeps the peak
// lower. A GOGC the user set wins.
func leanGC() (restore func()) { return setGC(50) }

func setGC(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }
}

// pauseHook returns the phase hook that pauses where a test asks (see
// pauseAt).
func pauseHook(ctx context.Context, stderr io.Writer) pins.Option {
	return pins.WithPhaseHook(func(p pins.Phase) { pauseAt(ctx, stderr, string(p)) })
}

// logMemory logs, at debug level, what the process holds at the end of a
// run: the Go heap and stacks, and the kernel's peak resident set.
func logMemory(ctx context.Context) {
	log := logctx.From(ctx)
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	peak := ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				peak = strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
			}
		}
	}
	log.Debug("memory", "heap_inuse_mb", m.HeapInuse>>20, "heap_sys_mb", m.HeapSys>>20, "stack_mb", m.StackSys>>20,
		"sys_mb", m.Sys>>20, "gc_runs", m.NumGC, "peak_rss", peak)
}
