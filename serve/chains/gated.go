package chains

import (
	"context"

	"pinbot.dev/pinbot/release"
)

// GatedEnv is an environment of a chain whose apps run in a namespace,
// with its repository's ledger.
type GatedEnv struct {
	Repo, Env string
	Chain     release.Chain
	Ledger    *release.Ledger
	Apps      []string
}

// Gated are the environments whose apps run in a namespace (in says
// which do), each with its ledger as it is now. The chains are the
// ledgers' (which the leader writes), so every replica judges alike.
func (rl *Runner) Gated(ctx context.Context, in func(app string) bool) ([]GatedEnv, error) {
	var out []GatedEnv
	for _, repo := range rl.deps.Repos() {
		var l *release.Ledger
		read := func() error {
			var err error
			if l == nil {
				l, err = rl.ledgers.Read(ctx, repo)
			}
			return err
		}
		chain, ok := rl.Chain(repo)
		if !ok {
			// A follower: the leader wrote the chain into the ledger.
			if err := read(); err != nil {
				return nil, err
			}
			chain = l.Chain
		}
		for _, e := range chain {
			var apps []string
			for _, name := range e.Apps {
				if in(name) {
					apps = append(apps, name)
				}
			}
			if len(apps) == 0 {
				continue
			}
			if err := read(); err != nil {
				return nil, err
			}
			out = append(out, GatedEnv{Repo: repo, Env: e.Name, Chain: chain, Ledger: l, Apps: apps})
		}
	}
	return out, nil
}
