package chains

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/clusters"
)

// TestWarnClustersLeft: a cluster the ledger counted in a selected wave
// that this look no longer shows (its Secret relabelled) is logged, once,
// naming it; a wave whose clusters stay is not.
func TestWarnClustersLeft(t *testing.T) {
	const img = "registry.example/org/web"
	chain := release.Chain{{Name: "prod.rest", Of: "prod", Wave: "rest", Apps: []string{"web"}, Placement: clusters.Placement{Selector: map[string]string{"region": "us"}}}}
	l := release.New()
	l.Track("prod.rest", img).Clusters = []release.ClusterProof{{Cluster: "us-1", Proven: true}, {Cluster: "us-2", Proven: true}}
	look := func(cs ...string) string {
		var buf bytes.Buffer
		a := release.Assessment{Image: img}
		for _, c := range cs {
			a.Clusters = append(a.Clusters, release.ClusterProof{Cluster: c, Proven: true})
		}
		warnClustersLeft(slog.New(slog.NewTextHandler(&buf, nil)), l, release.Input{Chain: chain, Assessed: map[string]map[string]release.Assessment{"prod.rest": {img: a}}})
		return buf.String()
	}
	if got := look("us-1", "us-2"); got != "" {
		t.Errorf("the same clusters: %s", got)
	}
	if got := look("us-1"); !strings.Contains(got, "a cluster left a wave") || !strings.Contains(got, "cluster=us-2") || strings.Contains(got, "cluster=us-1") {
		t.Errorf("us-2 relabelled out of the wave: %q", got)
	}
}
