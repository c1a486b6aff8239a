//go:build pinbotdebug

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
)

// pauseEnv names a phase at which pinbot says "pinbot: paused at <phase>"
// on stderr and waits for a signal: a phase of pins.Set (staged,
// journaled, renaming) or of a promotion (see promote.Phase). Tests use it
// to signal or kill the process at a known step, with no sleeps.
//
// It exists only in binaries built with -tags pinbotdebug (the process
// tests build one); a release build ignores the variable
// (see debugpause_off.go).
const pauseEnv = "PINBOT_DEBUG_PAUSE_AT"

// pauseAt pauses at phase when pauseEnv names it, until ctx is done.
func pauseAt(ctx context.Context, stderr io.Writer, phase string) {
	if at := os.Getenv(pauseEnv); at != "" && at == phase {
		fmt.Fprintf(stderr, "pinbot: paused at %s\n", phase)
		<-ctx.Done()
	}
}
