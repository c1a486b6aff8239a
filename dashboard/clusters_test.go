package dashboard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/clusters"
)

// TestAPlacedWaveShowsItsClustersProof: a wave that names its clusters
// shows its own clusters alone (the environment's apps run on others
// too), each with its proof as the ledger keeps it: proven since when,
// or why not.
func TestAPlacedWaveShowsItsClustersProof(t *testing.T) {
	since := now.Add(-3 * time.Minute)
	l := release.New()
	*l.Track("prod.eu", "platform/web") = release.Track{Pinned: digestB, Clusters: []release.ClusterProof{
		{Cluster: "eu-1", Proven: true, Since: &since}, {Cluster: "eu-2", Why: "pod web/web-1 container app is not Ready"}}}
	app := func(cluster string, labels map[string]string) App {
		return App{Status: &status.App{Cluster: cluster, ClusterLabels: labels, Proof: verdict.Verified},
			Verification: &verdict.Verification{Containers: []verdict.ContainerVerdict{{Workload: "Deployment/web", Container: "app", Pod: "web-1", GitDigest: digestB, RunningDigest: digestB, Verdict: verdict.Verified, Ready: cluster != "kubeConfig pinbot/eu-2"}}}}
	}
	eu := map[string]string{"region": "eu"}
	lg := Ledger{Repo: "platform/manifests", Ledger: l,
		Chain: release.Chain{{Name: "prod.eu", Of: "prod", Wave: "eu", Apps: []string{"web-eu-1", "web-eu-2", "web-us-1"}, Placement: clusters.Placement{Selector: eu, MaxUnproven: "1"}}},
		Apps:  map[string]App{"web-eu-1": app("kubeConfig pinbot/eu-1", eu), "web-eu-2": app("kubeConfig pinbot/eu-2", eu), "web-us-1": app("us-1", map[string]string{"region": "us"})}}
	for name, a := range lg.Apps {
		a.Name = name
		lg.Apps[name] = a
	}
	got := BuildReleases([]Ledger{lg}, now, 0).Releases[0].Stages[0].Clusters
	want := []ClusterPods{
		{Cluster: "eu-1", Ready: 1, Total: 1, Proof: "proven since 3m ago", ProofClass: "ok"},
		{Cluster: "eu-2", Total: 1, Proof: "unproven: pod web/web-1 container app is not Ready", ProofClass: "bad"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the wave's clusters (-want +got):\n%s", diff)
	}
}
