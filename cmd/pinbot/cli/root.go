// Package cli holds pinbot's cobra commands, one command per file. It only
// wires flags into the option structs of the domain packages and prints
// their results; decisions live in those packages.
package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/examples"
	"pinbot.dev/pinbot/cmd/pinbot/internal/flags"
	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/logsink"
)

// Exit codes, as documented in the README. A check (verify, diff) exits
// exitError for its negative answer alone (not verified, differs), and
// exitUsage when it could not be made, as kubectl diff does.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// checkAnnotation marks a check command.
const checkAnnotation = "pinbot.dev/check"

// answer marks a check's negative answer: exitError.
type answer struct{ error }

// globals are the flags every command shares.
type globals struct {
	output    string // "text", "json" or "yaml"
	verbose   bool
	logFormat string // "text" or "json"
	logLevel  string // "debug", "info", "warn" or "error"
}

func (g *globals) validate() error {
	switch g.output {
	case "text", "json", "yaml":
	default:
		return usageErrorf("flag -o/--output: want text, json or yaml, got %s", clip.Quote(g.output))
	}
	switch g.logFormat {
	case "text", "json":
	default:
		return usageErrorf("flag --log-format: want text or json, got %s", clip.Quote(g.logFormat))
	}
	if _, err := g.level(); err != nil {
		return err
	}
	return nil
}

// level is the log level: --log-level, or debug with -v.
func (g *globals) level() (slog.Level, error) {
	if g.verbose {
		return slog.LevelDebug, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(g.logLevel)); err != nil {
		return 0, usageErrorf("flag --log-level: want debug, info, warn or error, got %s", clip.Quote(g.logLevel))
	}
	return l, nil
}

// logger is the logger the flags ask for, writing to w.
func (g *globals) logger(w io.Writer) *slog.Logger {
	level, _ := g.level() // validated
	return logsink.New(w, g.logFormat == "json", level)
}

// json reports whether the command should write structured output: JSON,
// which -o yaml turns into YAML on its way out (output.Writer).
func (g *globals) json() bool { return g.output == "json" || g.output == "yaml" }

// usageError marks an error as bad usage (exit code 2).
type usageError = flags.UsageError

var usageErrorf = flags.Usagef

// NewRootCommand returns the pinbot command tree.
func NewRootCommand() *cobra.Command { return newRootCommand(nil) }

// newRootCommand is the command tree; under -o yaml it has out convert
// the commands' JSON (out may be nil when the caller wants JSON as is).
func newRootCommand(out *output.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "pinbot",
		Short:         "Promote image digests through Gitea pull requests and prove the cluster runs them",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.validate(); err != nil {
				return err
			}
			if g.output == "yaml" && out != nil {
				out.ToYAML()
			}
			logger := g.logger(cmd.ErrOrStderr())
			logsink.Klog(logger)
			cmd.SetContext(logctx.Into(cmd.Context(), logger))
			return nil
		},
	}
	root.PersistentFlags().StringVarP(&g.output, "output", "o", "text", "output format: text, json or yaml")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log debug detail to stderr (--log-level debug)")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text (logfmt) or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{Err: err} })

	root.AddCommand(
		newVersionCommand(g),
		newConfigCommand(g),
		newPinsCommand(g),
		newResolveCommand(g),
		newPromoteCommand(g),
		newDriftCommand(g),
		newReconcileCommand(g),
		newServeCommand(g),
		newSyncCommand(g),
		newRefreshCommand(g),
		newVerifyCommand(g),
		newStatusCommand(g),
		newHistoryCommand(g),
		newDiffCommand(g),
		newLedgerCommand(g),
		newHoldCommand(g),
		newChainCommand(),
		newProtectCommand(g),
		newAttestCommand(g),
	)
	return examples.Apply(root)
}

// Execute runs the command line args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ow := output.NewWriter(stdout)
	defer ow.Close()
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	ctx = context.WithValue(ctx, closersKey{}, &closers)
	root := newRootCommand(ow)
	root.SetArgs(args)
	root.SetOut(ow)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	output.Failed(stderr, err)
	// Under -o json stdout holds one JSON document: a command that
	// already printed its result (a diff that differs, a verification
	// that failed) says so by its exit code, not by a second document.
	if f := root.PersistentFlags().Lookup("output"); f != nil && (f.Value.String() == "json" || f.Value.String() == "yaml") && !ow.Written() {
		output.Error(ow, err)
	}
	var ue *usageError
	var no *answer
	switch {
	case errors.As(err, &ue) || isCobraUsage(err):
		return exitUsage
	case cmd != nil && cmd.Annotations[checkAnnotation] != "" && !errors.As(err, &no):
		return exitUsage // the check could not be made
	}
	return exitError
}

type closersKey struct{}

// atExit has Execute run c when the command ends.
func atExit(ctx context.Context, c func() error) {
	if closers, ok := ctx.Value(closersKey{}).(*[]func() error); ok {
		*closers = append(*closers, c)
	}
}

// isCobraUsage reports errors cobra raises for bad command lines that do not
// pass through the flag error func, such as an unknown subcommand.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "required flag")
}

// exactArgs and maxArgs are cobra's, with the error marked as bad usage.
func exactArgs(n int) cobra.PositionalArgs { return usageArgs(cobra.ExactArgs(n)) }
func maxArgs(n int) cobra.PositionalArgs   { return usageArgs(cobra.MaximumNArgs(n)) }

func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{Err: err}
		}
		return nil
	}
}
