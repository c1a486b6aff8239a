package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
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
	insecure  bool
}

func (f *gateFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "gate-url", "",
		"pinbot serve's URL: ask its gate whether a digest is proven upstream, held or frozen before promoting into an environment")
	cmd.Flags().StringVar(&f.tokenFile, "gate-token-file", "",
		"file holding the gate's bearer token (default $"+gateTokenEnv+")")
	cmd.Flags().BoolVar(&f.insecure, "insecure-gate-url", false,
		"allow a plain-HTTP --gate-url that is not loopback, such as serve's in-cluster Service (the token then crosses the network in clear)")
}

// gate is the promotion gate the flags name, nil without --gate-url.
func (f *gateFlags) gate(repo string) (promote.Gate, error) {
	if f.url == "" {
		return nil, nil
	}
	if _, err := loopback.CheckURL(f.url, f.insecure); err != nil {
		return nil, usageErrorf("flag --gate-url %s: %w (--insecure-gate-url allows plain HTTP)", clip.Quote(redact.URL(f.url)), err)
	}
	tok := strings.TrimSpace(os.Getenv(gateTokenEnv))
	redact.Register(tok)
	if f.tokenFile != "" {
		t, err := gitforge.ReadToken(f.tokenFile)
		if err != nil {
			return nil, tokenFileError("--gate-token-file", err)
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

// tokenFileError is err of the token file of flag: bad usage when the
// file holds no token, which would leave an endpoint open or send no
// credential.
func tokenFileError(flag string, err error) error {
	if errors.Is(err, gitforge.ErrEmptyToken) {
		return usageErrorf("flag %s: %w", flag, err)
	}
	return fmt.Errorf("flag %s: %w", flag, err)
}
