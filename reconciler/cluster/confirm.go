package cluster

import (
	"context"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// Confirm reads snap's workloads' versions again, past the caches
// (ssa.Applier.Versions: a LIST per namespace that the proofs confirmed
// at once share), and says how one changed since the snapshot read it
// (verdict.Confirm).
func (c *Cluster) Confirm(ctx context.Context, snap *verdict.Snapshot) (string, bool) {
	return verdict.Confirm(ctx, snap, c.Applier.Versions)
}
