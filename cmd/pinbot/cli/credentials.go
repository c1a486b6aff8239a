package cli

import (
	"errors"
	"fmt"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/tokenfile"
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
// variable env, "" for neither (tokenfile.ResolveFrom). An empty file
// is bad usage: it would leave an endpoint open or send no credential.
func credential(flag, file, env string) (string, error) {
	tok, err := tokenfile.ResolveFrom(file, env)
	switch {
	case err == nil || file == "":
		return tok, err
	case errors.Is(err, tokenfile.ErrEmpty):
		return "", usageErrorf("flag %s: %w", flag, err)
	}
	return "", fmt.Errorf("flag %s: %w", flag, err)
}
