package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"

	"pinbot.dev/pinbot/internal/logctx"
)

// memoryReserve is what a container's memory limit keeps outside the Go
// runtime's soft limit: the executable's resident pages (about 60 MB, which
// the cgroup counts and the runtime does not) and some page cache.
const memoryReserve = 64 << 20

// SetMemoryLimit sets the Go runtime's soft memory limit, as
// --memory-limit says: "auto" (the default) takes the container's memory
// limit less memoryReserve, unless $GOMEMLIMIT is set; "none" sets no
// limit; a quantity such as "96Mi" sets that. Under the limit the runtime
// collects garbage sooner and returns freed memory to the system at once:
// a replica's idle memory is then its live heap plus little, at the cost
// of more GC work. It returns the limit set, 0 for none; its only error
// is a flag it cannot read.
func SetMemoryLimit(ctx context.Context, flag string) (int64, error) {
	log := logctx.From(ctx)
	switch flag {
	case "", "auto":
		if os.Getenv("GOMEMLIMIT") != "" {
			return debug.SetMemoryLimit(-1), nil // the runtime read it
		}
		l, err := memlimit.FromCgroup()
		if errors.Is(err, memlimit.ErrNoLimit) || errors.Is(err, memlimit.ErrNoCgroup) {
			return 0, nil
		}
		if err != nil {
			log.Warn("no soft memory limit: reading the container's memory limit failed", "error", err)
			return 0, nil
		}
		soft := softLimit(l)
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
// memoryReserve, and at least half of l.
func softLimit(l uint64) int64 {
	if l > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(max(l/2, l-min(l, memoryReserve)))
}
