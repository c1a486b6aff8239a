// Package command is what the build commands under hack/ share: a usage
// error, and a main that runs a command until SIGINT or SIGTERM and exits
// 2 on bad usage, 1 on any other error.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// UsageError is a bad command line or environment.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Run is a command: its args, outputs and environment.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error

// Main runs run with the process's args and exits: 0, 2 on a UsageError,
// 1 on another error, which it prints prefixed with name.
func Main(name string, run Run) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, err)
		var usage *UsageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
