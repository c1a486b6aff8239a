package flags

import (
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/kubeclient"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/release/store"
)

// Gate are the flags of the commands that ask the release chain
// before promoting into an environment: promote and drift. They ask
// serve's gate endpoint (--gate-url), or else read pinbot's ledger from
// the cluster a kubeconfig reaches; with neither, a promotion into an
// environment is refused (promote.ErrNoGate).
type Gate struct {
	url       string
	tokenFile string
	insecure  bool

	kubeconfig, context string
	ledgerNamespace     string
}

func (f *Gate) Bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "gate-url", "",
		"pinbot serve's URL: ask its gate whether a digest is proven upstream, held or frozen before promoting into an environment")
	cmd.Flags().StringVar(&f.tokenFile, "gate-token-file", "",
		"file holding the gate's bearer token (default $"+GateTokenEnv+")")
	cmd.Flags().BoolVar(&f.insecure, "insecure-gate-url", false,
		"allow a plain-HTTP --gate-url that is not loopback, such as serve's in-cluster Service (the token then crosses the network in clear)")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "",
		"without --gate-url: the kubeconfig whose cluster holds pinbot's ledger (default $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context to use (default: its current-context)")
	cmd.Flags().StringVar(&f.ledgerNamespace, "ledger-namespace", "pinbot-system",
		"without --gate-url: the namespace of pinbot's ledger ConfigMaps (serve's stateNamespace)")
}

// Admitter is the promotion gate the flags name: serve's endpoint (trusting
// caFile's CA too, as the forge's clients do), else the ledger in the
// cluster, else nil when there is no kubeconfig either.
func (f *Gate) Admitter(repo, caFile string) (promote.Admitter, error) {
	if f.url == "" {
		return f.ledgerGate(repo)
	}
	if _, err := loopback.CheckURL(f.url, f.insecure); err != nil {
		return nil, Usagef("flag --gate-url %s: %w (--insecure-gate-url allows plain HTTP)", clip.Quote(redact.URL(f.url)), err)
	}
	tok, err := Credential("--gate-token-file", f.tokenFile, GateTokenEnv)
	if err != nil {
		return nil, err
	}
	if tok == "" {
		return nil, Usagef("flag --gate-url: needs a token: --gate-token-file FILE or $%s", GateTokenEnv)
	}
	client := proofapi.Client{URL: f.url, Token: tok}
	if caFile != "" {
		pool, err := capool.Load(caFile)
		if err != nil {
			return nil, Usagef("flag --ca-file: %w", err)
		}
		client.HTTP = loopback.Client(30 * time.Second)
		client.HTTP.Transport = &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: capool.TLS(pool)}
	}
	return proofapi.Admit{Asker: client, Repo: repo}, nil
}

// ledgerGate reads repo's ledger from the cluster a kubeconfig reaches;
// nil when no kubeconfig is found.
func (f *Gate) ledgerGate(repo string) (promote.Admitter, error) {
	kube, err := kubeclient.FromKubeconfig(f.kubeconfig, f.context)
	switch {
	case err != nil:
		return nil, Usagef("flag --kubeconfig: loading the kubeconfig of pinbot's ledger: %w", err)
	case kube == nil:
		return nil, nil
	}
	return store.Gate{Ledgers: store.New(kube, f.ledgerNamespace), Repo: repo}, nil
}
