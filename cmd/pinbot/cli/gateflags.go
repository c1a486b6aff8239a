package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release/gate"
)

// gateTokenEnv holds the gate token when --gate-token-file is not given.
const gateTokenEnv = "PINBOT_GATE_TOKEN"

// gateFlags are the flags of the commands that ask pinbot serve's gate
// before promoting into an environment: promote and drift.
type gateFlags struct {
	url       string
	tokenFile string
}

func (f *gateFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "gate-url", "",
		"pinbot serve's URL: ask its gate whether a digest is proven upstream, held or frozen before promoting into an environment")
	cmd.Flags().StringVar(&f.tokenFile, "gate-token-file", "",
		"file holding the gate's bearer token (default $"+gateTokenEnv+")")
}

// gate is the promotion gate the flags name, nil without --gate-url.
func (f *gateFlags) gate(repo string) (promote.Gate, error) {
	if f.url == "" {
		return nil, nil
	}
	tok := strings.TrimSpace(os.Getenv(gateTokenEnv))
	if f.tokenFile != "" {
		t, err := gitforge.ReadToken(f.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("flag --gate-token-file: %w", err)
		}
		tok = t
	}
	if tok == "" {
		return nil, usageErrorf("flag --gate-url: needs a token: --gate-token-file FILE or $%s", gateTokenEnv)
	}
	return gateAdmit{gate.Admit{Client: gate.Client{URL: f.url, Token: tok}, Repo: repo}}, nil
}

// gateAdmit is gate.Admit as a promote.Gate.
type gateAdmit struct{ g gate.Admit }

func (a gateAdmit) Admit(ctx context.Context, ad promote.Admission) error {
	return a.g.Admit(ctx, ad.Env, ad.Upstream, ad.Image, ad.Digest, ad.Force)
}
