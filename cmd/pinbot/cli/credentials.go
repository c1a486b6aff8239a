package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
)

// The environment variables holding a credential whose file flag is not
// given. A credential is never a flag value: flags show in process
// listings and shell history.
const (
	tokenEnv         = gitforge.TokenEnv        // --token-file
	gateTokenEnv     = "PINBOT_GATE_TOKEN"      // --gate-token-file
	readTokenEnv     = "PINBOT_DASHBOARD_TOKEN" // --dashboard-token-file, --server-token-file
	webhookSecretEnv = "PINBOT_WEBHOOK_SECRET"  // --webhook-secret-file
)

// credential reads the token of flag: its file, else the environment
// variable env, "" for neither. It is registered with redact so it never
// shows in output, and refused when it could not go in an HTTP header
// (gitforge.CheckToken).
func credential(flag, file, env string) (string, error) {
	if file != "" {
		tok, err := gitforge.ReadToken(file)
		if errors.Is(err, gitforge.ErrEmptyToken) {
			// An empty file would leave an endpoint open or send no
			// credential: bad usage.
			return "", usageErrorf("flag %s: %w", flag, err)
		}
		if err != nil {
			return "", fmt.Errorf("flag %s: %w", flag, err)
		}
		return tok, nil
	}
	tok := strings.TrimSpace(os.Getenv(env))
	redact.Register(tok)
	if err := gitforge.CheckToken(tok); err != nil {
		return "", fmt.Errorf("$%s: %w", env, err)
	}
	return tok, nil
}
