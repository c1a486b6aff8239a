package serve

import (
	"errors"
	"testing"

	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestAppReportsItsCluster: a wave's placement picks an app by the
// cluster of its last pass: its spoke, or pinbot's own ("in-cluster")
// once a pass read it; a pass that failed before it knew the cluster
// places the app nowhere, never on pinbot's own by default.
func TestAppReportsItsCluster(t *testing.T) {
	labels := map[string]string{"region": "eu"}
	for _, tc := range []struct {
		name  string
		st    *status.App
		err   error
		want  string
		label bool
	}{
		{"a spoke", &status.App{Cluster: "kubeConfig pinbot-system/eu-1", ClusterLabels: labels}, nil, "kubeConfig pinbot-system/eu-1", true},
		{"a spoke that stopped answering", &status.App{Cluster: "kubeConfig pinbot-system/eu-1", ClusterLabels: labels}, errors.New("unreachable"), "kubeConfig pinbot-system/eu-1", true},
		{"pinbot's own", &status.App{}, nil, "in-cluster", false},
		{"a pass that failed before it knew", &status.App{}, errors.New("no such Application"), "", false},
		{"never passed", nil, nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := appReport("web", tc.st, &verdict.Verification{}, tc.err)
			if r.Cluster != tc.want || (r.Labels != nil) != tc.label {
				t.Errorf("cluster %q, labels %v; want %q, labels %v", r.Cluster, r.Labels, tc.want, tc.label)
			}
		})
	}
}
