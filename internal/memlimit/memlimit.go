// Package memlimit sets the Go runtime's soft memory limit of a
// long-running pinbot from its container's: serve's --memory-limit.
package memlimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"

	automem "github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"

	"pinbot.dev/pinbot/internal/logctx"
)

// memoryReserve is the least a container's memory limit keeps outside
// the Go runtime's soft limit, for page cache and what the runtime does
// not count; the executable's pages, which the cgroup counts too, are
// kept besides (reserve).
const memoryReserve = 64 << 20

// Set sets the Go runtime's soft memory limit, as
// --memory-limit says: "auto" (the default) takes the container's memory
// limit less the executable's size (Auto), unless $GOMEMLIMIT
// is set; "none" sets no limit; a quantity such as "96Mi" sets that. Under the limit the runtime
// collects garbage sooner and returns freed memory to the system at once:
// a replica's idle memory is then its live heap plus little, at the cost
// of more GC work. It returns the limit set, 0 for none; its only error
// is a flag it cannot read.
func Set(ctx context.Context, flag string) (int64, error) {
	log := logctx.From(ctx)
	switch flag {
	case "", "auto":
		if os.Getenv("GOMEMLIMIT") != "" {
			return debug.SetMemoryLimit(-1), nil // the runtime read it
		}
		l, err := automem.FromCgroup()
		if errors.Is(err, automem.ErrNoLimit) || errors.Is(err, automem.ErrNoCgroup) {
			return 0, nil
		}
		if err != nil {
			log.Warn("no soft memory limit: reading the container's memory limit failed", "error", err)
			return 0, nil
		}
		soft := Auto(l, "")
		debug.SetMemoryLimit(soft)
		log.Info("soft memory limit", "bytes", soft, "container", l)
		return soft, nil
	case "none":
		debug.SetMemoryLimit(math.MaxInt64)
		return 0, nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil || q.Sign() <= 0 || strings.HasPrefix(flag, "+") {
		return 0, fmt.Errorf("flag --memory-limit: %q: want auto, none, or a size such as 96Mi", flag)
	}
	v := q.Value()
	debug.SetMemoryLimit(v)
	log.Info("soft memory limit", "bytes", v)
	return v, nil
}

// softLimit is the soft limit for a container limit of l bytes: l less
// reserve, and at least half of l.
func softLimit(l, reserve uint64) int64 {
	if l > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(max(l/2, l-min(l, reserve)))
}

// Auto is the soft limit "auto" sets in a container limited to
// container bytes, running executable ("" for this process's): the
// container's limit less the executable's size, every page of which the
// kernel may map and the cgroup counts (a replica of a 10,000-app fleet
// had 57 to 74 MiB of it resident, and with 64Mi kept sat at its
// container's limit), or less memoryReserve if that is more; at least
// half the container's limit.
func Auto(container uint64, executable string) int64 {
	return softLimit(container, reserve(executable))
}

// reserve is max(memoryReserve, the size of executable or, for "", of this
// process's).
func reserve(executable string) uint64 {
	if executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return memoryReserve
		}
		executable = exe
	}
	fi, err := os.Stat(executable)
	if err != nil {
		return memoryReserve
	}
	return max(memoryReserve, uint64(fi.Size()))
}
