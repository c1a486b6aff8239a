package cli

import "pinbot.dev/pinbot/cmd/pinbot/internal/flags"

// The environment variables holding a credential whose file flag is not
// given. A credential is never a flag value: flags show in process
// listings and shell history.
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
