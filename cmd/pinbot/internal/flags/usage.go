// Package flags holds the flag groups several pinbot commands share:
// the forge and repository a promotion publishes into (Forge), the gate
// that admits it (Gate), the operator's signature policy (Policy), the
// three together (Publish), and how a bad flag is told (UsageError, exit
// code 2) and a credential read (Credential). A credential is never a
// flag value: flags show in process listings and shell history.
package flags

import (
	"errors"
	"fmt"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/tokenfile"
)

// The environment variables behind the shared flags.
const (
	TokenEnv     = gitforge.TokenEnv   // --token-file
	GateTokenEnv = "PINBOT_GATE_TOKEN" // --gate-token-file
	ForgeURLEnv  = "PINBOT_FORGE_URL"  // --forge-url
	RepoEnv      = "PINBOT_REPO"       // --repo
)

// UsageError marks an error as bad usage (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError of the formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Credential reads the token of flag: its file, else the environment
// variable env, "" for neither (tokenfile.ResolveFrom). An empty file
// is bad usage: it would leave an endpoint open or send no credential.
func Credential(flag, file, env string) (string, error) {
	tok, err := tokenfile.ResolveFrom(file, env)
	switch {
	case err == nil || file == "":
		return tok, err
	case errors.Is(err, tokenfile.ErrEmpty):
		return "", Usagef("flag %s: %w", flag, err)
	}
	return "", fmt.Errorf("flag %s: %w", flag, err)
}
