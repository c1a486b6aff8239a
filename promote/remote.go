package promote

import (
	"context"

	"pinbot.dev/pinbot/gitforge"
)

// remoteHead returns the commit branch points at on the remote now; see
// gitforge.RemoteHead, which owns the Git protocol and its credentials.
func remoteHead(ctx context.Context, url, branch string, auth gitforge.Auth) (string, error) {
	return gitforge.RemoteHead(ctx, url, branch, auth)
}
