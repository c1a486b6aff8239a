package chains

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release"
)

// Bypassed says, by environment and image, how each digest newly pinned
// in an environment with from: merged past pinbot's gate
// (release.Input.Bypassed): no pull request merged the commit at the head
// of the base, or the head that pull request merged lacked pinbot's own
// pinbot/gate success (none, another account's, or not success). Anybody
// who may write to the repository can post a pinbot/gate status, so only
// the status pinbot's account posted counts. A pinbot rollback is never a
// bypass. Nothing is asked of Gitea unless a pin changed; an answer
// Gitea could not give fails the step, which tries again.
//
// The merge is read from the base's head: when several commits land
// between two steps, it is the last one's pull request that is judged.
func Bypassed(ctx context.Context, env promote.Env, l *release.Ledger, chain release.Chain, inv *promote.Inventory) (map[string]map[string]string, error) {
	forge, ok := env.Forge.(*gitforge.Gitea)
	if !ok {
		return nil, nil
	}
	var out map[string]map[string]string
	var why string
	judged := false
	for _, e := range chain {
		if e.From == "" {
			continue
		}
		for image, digest := range inv.Pinned[e.Name] {
			t := l.Lookup(e.Name, image)
			if t == nil || t.Pinned == "" || t.Pinned == digest || (t.Rollback != nil && t.Rollback.Digest == digest) {
				continue
			}
			if !judged {
				var err error
				if why, err = MergeBypass(ctx, forge, env.Repo, inv.Commit); err != nil {
					return nil, fmt.Errorf("reading how %s merged: %w", imageref.Short(inv.Commit), err)
				}
				judged = true
			}
			if why == "" {
				continue
			}
			if out == nil {
				out = map[string]map[string]string{}
			}
			if out[e.Name] == nil {
				out[e.Name] = map[string]string{}
			}
			out[e.Name][image] = why
		}
	}
	return out, nil
}
