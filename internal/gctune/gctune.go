// Package gctune paces the garbage collector to the kind of run a command
// is, and reports what the run held. A GOGC the user set always wins.
package gctune

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"pinbot.dev/pinbot/internal/logctx"
)

// Batch makes the collector lazier for the rest of a short batch job over
// many small files (listing or setting pins), where collecting every few
// megabytes of garbage cost a fifth of the time. The live heap is small,
// so the peak grows by a few megabytes. It returns a func restoring the
// setting, for tests that run commands in one process.
func Batch() (restore func()) { return set(400) }

// Lean makes the collector keener for the rest of a run that waits on the
// network, not the CPU (promote, drift): collecting twice as often costs
// a few milliseconds and keeps the peak lower.
func Lean() (restore func()) { return set(50) }

func set(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }
}

// LogMemory logs, at debug level, what the process holds at the end of a
// run: the Go heap and stacks, and the kernel's peak resident set.
func LogMemory(ctx context.Context) {
	log := logctx.From(ctx)
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	peak := ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				peak = strings.TrimSpace(v)
			}
		}
	}
	log.Debug("memory", "heap_inuse_mb", m.HeapInuse>>20, "heap_sys_mb", m.HeapSys>>20, "stack_mb", m.StackSys>>20,
		"sys_mb", m.Sys>>20, "gc_runs", m.NumGC, "peak_rss", peak)
}
