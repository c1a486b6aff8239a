package chains

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/assess"
	"pinbot.dev/pinbot/release/clusters"
)

// warnUnknownClusters logs, once, each cluster wave e names on which
// none of its apps runs: the wave counts it unproven, so nothing moves
// on from it until the name is mended (a typo, a Secret renamed).
func (rl *Runner) warnUnknownClusters(ctx context.Context, e release.Environment, reports []assess.Report) {
	var unknown, known []string
	for _, r := range reports {
		if r.Cluster != "" && !slices.Contains(known, r.Cluster) {
			known = append(known, r.Cluster)
		}
	}
	for _, name := range e.Placement.Clusters {
		if !slices.ContainsFunc(known, func(c string) bool { return clusters.Names(name, c) }) {
			unknown = append(unknown, name)
		}
	}
	key := e.Name + " clusters " + strings.Join(unknown, ",")
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(unknown) == 0 || rl.warned[key] {
		return
	}
	if rl.warned == nil {
		rl.warned = map[string]bool{}
	}
	rl.warned[key] = true
	logctx.From(ctx).Warn("a wave names clusters none of its apps runs on: they count as unproven", "env", e.Name, "clusters", unknown, "apps on", known)
}

// warnClustersLeft logs each cluster that the ledger counted in a wave
// and this look does not: its Secret's labels no longer match the wave's
// selector, or none of the wave's apps reports from it any more. Its
// proof no longer counts there, so whoever may label cluster Secrets
// moves clusters in and out of a selected wave: the log says so.
func warnClustersLeft(log *slog.Logger, l *release.Ledger, in release.Input) {
	for _, e := range in.Chain {
		if !e.Placement.Named() {
			continue
		}
		for image, a := range in.Assessed[e.Name] {
			t := l.Lookup(e.Name, image)
			if t == nil {
				continue
			}
			for _, was := range t.Clusters {
				if !slices.ContainsFunc(a.Clusters, func(c release.ClusterProof) bool { return c.Cluster == was.Cluster }) {
					log.Warn("a cluster left a wave: its Secret's labels no longer match the wave's selector, or none of the wave's apps reports from it; its proof no longer counts there",
						"env", e.Name, "image", image, "cluster", was.Cluster, "proven", was.Proven)
				}
			}
		}
	}
}
