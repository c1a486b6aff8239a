package gitforge

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/internal/redact"
)

// TokenEnv is the environment variable that holds the Gitea token when no
// token file is named. A token is never a flag value: flags show in
// process listings and shell history.
const TokenEnv = "PINBOT_GITEA_TOKEN"

// ResolveToken is the one place pinbot finds a Gitea token: the token file
// when one is named (see ReadToken), else $PINBOT_GITEA_TOKEN (see
// ResolveTokenFrom).
func ResolveToken(file string) (string, error) { return ResolveTokenFrom(file, TokenEnv) }

// ResolveTokenFrom finds a bearer token: the token file when one is named
// (see ReadToken), else the environment variable env, trimmed. The token
// is registered with internal/redact and checked (CheckToken). It is ""
// when neither holds one.
func ResolveTokenFrom(file, env string) (string, error) {
	if file != "" {
		return ReadToken(file)
	}
	tok := strings.TrimSpace(strings.TrimPrefix(os.Getenv(env), "\ufeff"))
	redact.Register(tok)
	if err := CheckToken(tok); err != nil {
		return "", fmt.Errorf("$%s: %w", env, err)
	}
	return tok, nil
}

// ErrEmptyToken: a token file holds nothing but blank space. Callers
// refuse it as bad usage: an empty token would leave an endpoint open, or
// send no credential at all.
var ErrEmptyToken = errors.New("empty, or blank space only: it holds no token")

// MaxTokenFile bounds the size of a token file ReadToken accepts; Gitea's
// tokens are 40 hex digits.
const MaxTokenFile = 4 << 10

// ReadToken reads the token held in file, trimmed of surrounding blank
// space, and registers it with internal/redact. Errors name the file but
// never quote its content: it cannot be read, it is larger than
// MaxTokenFile, it holds no token (empty or blank: a token file that
// would leave an endpoint open, or send no credential, is a mistake), or
// the token fails CheckToken (two lines, say), which would otherwise
// surface later as an HTTP header error naming neither.
func ReadToken(file string) (string, error) {
	raw, err := opfile.Read(file, MaxTokenFile)
	switch {
	case errors.Is(err, opfile.ErrTooLarge):
		return "", fmt.Errorf("token file %s: larger than %d bytes: is it a token?", file, MaxTokenFile)
	case errors.Is(err, opfile.ErrNotRegular):
		return "", fmt.Errorf("token file %s: not a regular file: a token file is a file", file)
	case err != nil:
		return "", fmt.Errorf("reading token file: %w", err)
	}
	tok := strings.TrimSpace(strings.TrimPrefix(string(raw), "\ufeff"))
	if tok == "" {
		return "", fmt.Errorf("token file %s: %w", file, ErrEmptyToken)
	}
	redact.Register(tok)
	if err := CheckToken(tok); err != nil {
		return "", fmt.Errorf("token file %s: %w", file, err)
	}
	return tok, nil
}

// CheckToken refuses a token that cannot go in an HTTP header: one that
// holds a line break, a space or a control character. The error says where
// but does not quote the token.
func CheckToken(tok string) error {
	if i := strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return fmt.Errorf("the token holds a line break, a space or a control character (at byte %d): a token is one word on one line", i)
	}
	return nil
}

// Dial returns the client of the Gitea at baseURL that trusts caFile (when
// named) besides the system roots, with token, or when that is "" the
// token ResolveToken finds for tokenFile.
func Dial(baseURL, tokenFile, caFile, token string) (*Gitea, error) {
	var opts []GiteaOption
	if token == "" {
		var err error
		if token, err = ResolveToken(tokenFile); err != nil {
			return nil, err
		}
		opts = append(opts, WithTokenSource("$"+TokenEnv))
		if tokenFile != "" {
			opts[0] = WithTokenSource("the token file " + tokenFile)
		}
	}
	if caFile != "" {
		opts = append(opts, WithCAFile(caFile))
	}
	return NewGitea(baseURL, token, opts...)
}
