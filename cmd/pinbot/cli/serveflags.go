package cli

import (
	"bytes"
	"os"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/memlimit"
	"pinbot.dev/pinbot/internal/pprofserve"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/serve"
	"pinbot.dev/pinbot/serve/chains"
)

// serveFlags are the HTTP endpoint flags of serve and reconcile.
type serveFlags struct {
	listen          string
	secretFile      string
	gateTokenFile   string
	releaseInterval time.Duration
	reloadInterval  time.Duration
	readTokenFile   string
	authHeader      string
	webhookListen   string
	noWebhook       bool
	pprofListen     string
	memoryLimit     string
	clusterTimeout  time.Duration
}

func (f *serveFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.listen, "listen", "",
		`serve /webhook/gitea, /metrics and /healthz on this address, e.g. ":8080" (default: no HTTP endpoint)`)
	cmd.Flags().StringVar(&f.secretFile, "webhook-secret-file", "",
		"file holding the Gitea webhook secret, required with --listen unless --no-webhook (default $"+webhookSecretEnv+")")
	cmd.Flags().StringVar(&f.gateTokenFile, "gate-token-file", "",
		"file holding the bearer token of the gate endpoint "+proofapi.Path+" (default $"+gateTokenEnv+"; neither: no gate endpoint)")
	cmd.Flags().DurationVar(&f.releaseInterval, "release-interval", chains.DefaultInterval,
		"how often the release chains (.pinbot.yaml environments) are looked at: proofs, soaks, gates, rollbacks")
	cmd.Flags().StringVar(&f.readTokenFile, "dashboard-token-file", "",
		"file holding the bearer token the dashboard and its JSON API ask of readers (default $"+readTokenEnv+"; neither, nor --auth-proxy-header: anyone who reaches --listen reads)")
	cmd.Flags().StringVar(&f.authHeader, "auth-proxy-header", "",
		"a header an authenticating proxy sets, such as X-Forwarded-User: a request carrying it reads the dashboard (only behind that proxy)")
	cmd.Flags().StringVar(&f.webhookListen, "webhook-listen", "",
		`serve /webhook/gitea on this address of its own instead of --listen's, e.g. ":8081"`)
	cmd.Flags().BoolVar(&f.noWebhook, "no-webhook", false,
		"serve no /webhook/gitea, so no webhook secret is needed: apps are passed at their interval only")
	cmd.Flags().StringVar(&f.pprofListen, "pprof-listen", "",
		`serve Go's runtime profiles (/debug/pprof/) on this address of their own, e.g. ":6060" (loopback unless a host is named; default: none)`)
	cmd.Flags().StringVar(&f.memoryLimit, "memory-limit", "auto",
		`the Go runtime's soft memory limit: a size such as "96Mi", "none", or "auto": the container's memory limit less the executable's size (at least 64Mi) and at least half of it, unless $GOMEMLIMIT is set`)
	cmd.Flags().DurationVar(&f.clusterTimeout, "cluster-timeout", cluster.DefaultDownAfter,
		"how long a cluster whose watches broke may go unanswered before its apps say Unknown (proof, dashboard, gate, metrics); they recover by themselves")
	cmd.Flags().DurationVar(&f.reloadInterval, "reload-interval", serve.DefaultReloadInterval,
		"how often the config file is looked at; a valid change is applied in place, an invalid one logged and kept out")
}

// tokenBytes is credential's token as bytes, nil for none: the
// dashboard's read token, or the gate endpoint's.
func tokenBytes(flag, file, env string) ([]byte, error) {
	tok, err := credential(flag, file, env)
	if err != nil || tok == "" {
		return nil, err
	}
	return []byte(tok), nil
}

// secret validates the flags and returns the webhook secret, nil when
// --listen or the webhook is off. Without a secret the webhook would
// trigger on anyone's request, so it is a usage error.
func (f *serveFlags) secret() ([]byte, error) {
	if f.listen == "" || f.noWebhook {
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
		return nil, usageErrorf("flag --webhook-secret-file (or $%s): required with --listen, unless --no-webhook", webhookSecretEnv)
	}
	redact.Register(string(secret))
	return secret, nil
}

// runServe opens the reconciler and runs serve with o: serve's and
// reconcile's shared RunE.
func runServe(cmd *cobra.Command, f *reconcilerFlags, sf *serveFlags, o serve.Options) error {
	o.Listen, o.ReleaseInterval = sf.listen, sf.releaseInterval
	o.AuthHeader, o.WebhookListen, o.NoWebhook = sf.authHeader, sf.webhookListen, sf.noWebhook
	var err error
	if o.GateToken, err = tokenBytes("--gate-token-file", sf.gateTokenFile, gateTokenEnv); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return &usageError{Err: err}
	}
	if o.Secret, err = sf.secret(); err != nil {
		return err
	}
	if o.ReadToken, err = tokenBytes("--dashboard-token-file", sf.readTokenFile, readTokenEnv); err != nil {
		return err
	}
	if sf.reloadInterval <= 0 {
		return usageErrorf("flag --reload-interval: must be positive")
	}
	src, err := f.source(cmd.Context())
	if err != nil {
		return err
	}
	src.Every = sf.reloadInterval
	if sf.clusterTimeout <= 0 {
		return usageErrorf("flag --cluster-timeout: must be positive")
	}
	src.Options = append(src.Options, reconciler.WithClusterDownAfter(sf.clusterTimeout))
	if o.Shards > 0 {
		src.Options = append(src.Options, reconciler.WithReplica(o.Lease.ID))
	}
	if o.Elect {
		src.Replica = o.Lease.ID
	}
	if _, err := memlimit.Set(cmd.Context(), sf.memoryLimit); err != nil {
		return &usageError{Err: err}
	}
	if sf.pprofListen != "" {
		if err := pprofserve.Serve(cmd.Context(), sf.pprofListen); err != nil {
			return &usageError{Err: err}
		}
	}
	return serve.RunReloading(cmd.Context(), src, o)
}
