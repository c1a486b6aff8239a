// Package tokenfile reads a bearer token from a file or an environment
// variable: bounded, trimmed, checked, and registered for redaction.
package tokenfile

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/internal/redact"
)

// ResolveFrom finds a bearer token: the token file when one is named
// (see Read), else the environment variable env, trimmed. The token
// is registered with internal/redact and checked (Check). It is ""
// when neither holds one.
func ResolveFrom(file, env string) (string, error) {
	if file != "" {
		return Read(file)
	}
	tok := strings.TrimSpace(strings.TrimPrefix(os.Getenv(env), "\ufeff"))
	redact.Register(tok)
	if err := Check(tok); err != nil {
		return "", fmt.Errorf("$%s: %w", env, err)
	}
	return tok, nil
}

// ErrEmpty: a token file holds nothing but blank space. Callers
// refuse it as bad usage: an empty token would leave an endpoint open, or
// send no credential at all.
var ErrEmpty = errors.New("empty, or blank space only: it holds no token")

// MaxSize bounds the size of a token file Read accepts; Gitea's
// tokens are 40 hex digits.
const MaxSize = 4 << 10

// Read reads the token held in file, trimmed of surrounding blank
// space, and registers it with internal/redact. Errors name the file but
// never quote its content: it cannot be read, it is larger than
// MaxSize, it holds no token (empty or blank: a token file that
// would leave an endpoint open, or send no credential, is a mistake), or
// the token fails Check (two lines, say), which would otherwise
// surface later as an HTTP header error naming neither.
func Read(file string) (string, error) {
	raw, err := opfile.Read(file, MaxSize)
	switch {
	case errors.Is(err, opfile.ErrTooLarge):
		return "", fmt.Errorf("token file %s: larger than %d bytes: is it a token?", file, MaxSize)
	case errors.Is(err, opfile.ErrNotRegular):
		return "", fmt.Errorf("token file %s: not a regular file: a token file is a file", file)
	case err != nil:
		return "", fmt.Errorf("reading token file: %w", err)
	}
	tok := strings.TrimSpace(strings.TrimPrefix(string(raw), "\ufeff"))
	if tok == "" {
		return "", fmt.Errorf("token file %s: %w", file, ErrEmpty)
	}
	redact.Register(tok)
	if err := Check(tok); err != nil {
		return "", fmt.Errorf("token file %s: %w", file, err)
	}
	return tok, nil
}

// Check refuses a token that cannot go in an HTTP header: one that
// holds a line break, a space or a control character. The error says where
// but does not quote the token.
func Check(tok string) error {
	if i := strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return fmt.Errorf("the token holds a line break, a space or a control character (at byte %d): a token is one word on one line", i)
	}
	return nil
}
