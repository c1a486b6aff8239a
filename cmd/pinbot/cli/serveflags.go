package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/release/gate"
	"pinbot.dev/pinbot/serve"
)

// webhookSecretEnv holds the webhook secret when --webhook-secret-file is
// not given.
const webhookSecretEnv = "PINBOT_WEBHOOK_SECRET"

// serveFlags are the HTTP endpoint flags of serve and reconcile.
type serveFlags struct {
	listen          string
	secretFile      string
	gateTokenFile   string
	releaseInterval time.Duration
}

func (f *serveFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.listen, "listen", "",
		`serve /webhook/gitea, /metrics and /healthz on this address, e.g. ":8080" (default: no HTTP endpoint)`)
	cmd.Flags().StringVar(&f.secretFile, "webhook-secret-file", "",
		"file holding the Gitea webhook secret, required with --listen (default $"+webhookSecretEnv+")")
	cmd.Flags().StringVar(&f.gateTokenFile, "gate-token-file", "",
		"file holding the bearer token of the gate endpoint "+gate.Path+" (default $"+gateTokenEnv+"; neither: no gate endpoint)")
	cmd.Flags().DurationVar(&f.releaseInterval, "release-interval", serve.DefaultReleaseInterval,
		"how often the release chains (.pinbot.yaml environments) are looked at: proofs, soaks, gates, rollbacks")
}

// gateToken is the gate endpoint's token, nil for no endpoint.
func (f *serveFlags) gateToken() ([]byte, error) {
	tok := strings.TrimSpace(os.Getenv(gateTokenEnv))
	if f.gateTokenFile != "" {
		t, err := gitforge.ReadToken(f.gateTokenFile)
		if err != nil {
			return nil, usageErrorf("flag --gate-token-file: %w", err)
		}
		tok = t
	}
	if tok != "" && f.listen == "" {
		return nil, usageErrorf("flag --gate-token-file: the gate endpoint needs --listen")
	}
	redact.Register(tok)
	if tok == "" {
		return nil, nil
	}
	return []byte(tok), nil
}

// secret validates the flags and returns the webhook secret, nil when
// --listen is off. Without a secret the webhook would trigger on anyone's
// request, so it is a usage error.
func (f *serveFlags) secret() ([]byte, error) {
	if f.listen == "" {
		return nil, nil
	}
	var secret []byte
	if f.secretFile != "" {
		b, err := os.ReadFile(f.secretFile)
		if err != nil {
			return nil, usageErrorf("flag --webhook-secret-file: %w", err)
		}
		secret = bytes.TrimSpace(b)
		if len(secret) == 0 {
			return nil, usageErrorf("flag --webhook-secret-file: %s is empty", f.secretFile)
		}
	} else {
		secret = bytes.TrimSpace([]byte(os.Getenv(webhookSecretEnv)))
	}
	if len(secret) == 0 {
		return nil, usageErrorf("flag --webhook-secret-file (or $%s): required with --listen", webhookSecretEnv)
	}
	redact.Register(string(secret))
	return secret, nil
}

// runServe opens the reconciler and runs serve with o: serve's and
// reconcile's shared RunE.
func runServe(cmd *cobra.Command, f *reconcilerFlags, sf *serveFlags, o serve.Options) error {
	secret, err := sf.secret()
	if err != nil {
		return err
	}
	o.Listen, o.Secret = sf.listen, secret
	if o.GateToken, err = sf.gateToken(); err != nil {
		return err
	}
	if sf.releaseInterval <= 0 {
		return usageErrorf("flag --release-interval: must be positive")
	}
	o.ReleaseInterval = sf.releaseInterval
	r, cfg, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	o.Cache = f.gitCache
	rc, err := f.restConfig()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return serve.Run(cmd.Context(), cfg, r, kube, o)
}
