package cli

import "pinbot.dev/pinbot/cmd/pinbot/internal/flags"

// The environment variables behind flags: a credential whose file flag
// is not given is read from its variable, never from a flag value.
const (
	tokenEnv         = flags.TokenEnv           // --token-file
	gateTokenEnv     = flags.GateTokenEnv       // --gate-token-file
	forgeURLEnv      = flags.ForgeURLEnv        // --forge-url
	repoEnv          = flags.RepoEnv            // --repo
	configEnv        = "PINBOT_CONFIG"          // --config
	readTokenEnv     = "PINBOT_DASHBOARD_TOKEN" // --dashboard-token-file, --server-token-file
	webhookSecretEnv = "PINBOT_WEBHOOK_SECRET"  // --webhook-secret-file
)

// credential reads the token of flag (flags.Credential).
var credential = flags.Credential
