package assess

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release/clusters"
)

// on is an app's report from cluster, with its Secret's labels.
func on(cluster string, labels map[string]string, r Report) Report {
	r.App, r.Cluster, r.Labels = "web-"+cluster, cluster, labels
	return r
}

// TestOfPlaced: a wave that names its clusters is proven cluster by
// cluster. maxUnproven tolerates clusters not proven yet (unreachable,
// not Ready, one no app reports from), never one that runs another
// digest once settled or whose rollout failed, and one cluster at least
// must prove it.
func TestOfPlaced(t *testing.T) {
	good := view(verdict.Healthy, true, container("w1", img, dA, verdict.Verified, true, ""))
	notReady := view(verdict.Progressing, true, container("w1", img, dA, verdict.Verified, false, ""))
	stale := view(verdict.Healthy, false, container("w1", img, dA, verdict.Mismatch, true, ""))
	degraded := view(verdict.Degraded, true, container("w1", img, dA, verdict.Verified, true, ""))
	down := Report{Err: errors.New("cluster unreachable")}
	pending := Report{Health: verdict.Progressing, Synced: true, Reasons: []string{"Deployment prod/web: generation 2 not yet observed by its controller"}}
	otherImage := view(verdict.Healthy, true, container("s1", "registry.example/org/side", dC, verdict.Verified, true, ""))
	eu := map[string]string{"region": "eu"}
	us := map[string]string{"region": "us"}
	for _, tc := range []struct {
		name     string
		place    clusters.Placement
		reports  []Report
		proven   bool
		why      string // part of Why
		failure  string // part of Failure
		clusters []string
	}{
		{"every named cluster proves it", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, good), on("us-1", nil, stale)}, true, "", "", []string{"eu-1+", "eu-2+"}},
		{"a cluster not Ready, none tolerated", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, notReady)}, false, "1 of 2 clusters unproven, over maxUnproven 0; cluster eu-2: pod prod/w1 container app is not Ready", "", []string{"eu-1+", "eu-2-"}},
		{"a cluster not Ready, one tolerated", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}, MaxUnproven: "1"},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, notReady)}, true, "", "", []string{"eu-1+", "eu-2-"}},
		{"an unreachable cluster is unproven, never proven", clusters.Placement{Clusters: []string{"eu-1", "eu-2", "eu-3"}, MaxUnproven: "1"},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, down), on("eu-3", nil, notReady)}, false, "2 of 3 clusters unproven, over maxUnproven 1; cluster eu-2: app web-eu-2: cluster unreachable", "", []string{"eu-1+", "eu-2-", "eu-3-"}},
		{"a cluster no app reports from", clusters.Placement{Clusters: []string{"eu-1", "eu-9"}},
			[]Report{on("eu-1", nil, good)}, false, "cluster eu-9: none of the wave's apps reports from it", "", []string{"eu-1+", "eu-9-"}},
		{"a stale node is never tolerated", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}, MaxUnproven: "50%"},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, stale)}, false, "cluster eu-2: pod prod/w1 container app is Mismatch", "", []string{"eu-1+", "eu-2-"}},
		{"a failed rollout is never tolerated, and fails at once", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}, MaxUnproven: "1"},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, degraded)}, false, "cluster eu-2: app web-eu-2 is Degraded", "cluster eu-2: app web-eu-2 is Degraded", []string{"eu-1+", "eu-2-"}},
		{"tolerance proves nothing alone", clusters.Placement{Selector: eu, MaxUnproven: "100%"},
			[]Report{on("eu-1", eu, notReady), on("eu-2", eu, down)}, false, "no cluster of the wave proves " + img, "", []string{"eu-1-", "eu-2-"}},
		{"a selector picks clusters by label", clusters.Placement{Selector: eu},
			[]Report{on("eu-1", eu, good), on("eu-2", eu, good), on("us-1", us, notReady)}, true, "", "", []string{"eu-1+", "eu-2+"}},
		{"25% of four rounds down to one", clusters.Placement{Selector: eu, MaxUnproven: "25%"},
			[]Report{on("a", eu, good), on("b", eu, good), on("c", eu, notReady), on("d", eu, notReady)}, false, "2 of 4 clusters unproven, over maxUnproven 1", "", []string{"a+", "b+", "c-", "d-"}},
		{"a cluster running none of the image does not count", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, otherImage)}, true, "", "", []string{"eu-1+"}},
		{"a rollout not observed yet keeps its cluster, unproven", clusters.Placement{Clusters: []string{"eu-1", "eu-2"}},
			[]Report{on("eu-1", nil, good), on("eu-2", nil, pending)}, false, "cluster eu-2: app web-eu-2 lists no Pod yet: Deployment prod/web: generation 2 not yet observed", "", []string{"eu-1+", "eu-2-"}},
		{"an app whose cluster is not known yet counts nowhere", clusters.Placement{Selector: eu},
			[]Report{on("eu-1", eu, good), {App: "web-new", Err: errors.New("not observed yet")}}, true, "", "", []string{"eu-1+"}},
		{"a kubeconfig Secret by its name", clusters.Placement{Clusters: []string{"eu-1", "pinbot/eu-2"}},
			[]Report{on("kubeConfig pinbot/eu-1", nil, good), on("kubeConfig pinbot/eu-2", nil, good)}, true, "", "", []string{"eu-1+", "pinbot/eu-2+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := OfPlaced(img, dA, tc.reports, tc.place)
			if o.Proven != tc.proven || !strings.Contains(o.Why, tc.why) || !strings.Contains(o.Failure, tc.failure) || (tc.failure == "") != (o.Failure == "") {
				t.Errorf("proven %v, why %q, failure %q; want %v, %q, %q", o.Proven, o.Why, o.Failure, tc.proven, tc.why, tc.failure)
			}
			var got []string
			for _, c := range o.Clusters {
				got = append(got, c.Cluster+map[bool]string{true: "+", false: "-"}[c.Proven])
			}
			if !slices.Equal(got, tc.clusters) {
				t.Errorf("clusters %q, want %q", got, tc.clusters)
			}
		})
	}
	// Without a placement, the wave is judged as one.
	if o := OfPlaced(img, dA, []Report{good}, clusters.Placement{}); !o.Proven || o.Clusters != nil {
		t.Errorf("no placement: %+v", o)
	}
}
