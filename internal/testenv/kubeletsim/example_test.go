package kubeletsim_test

import (
	"context"
	"log"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
)

// A reconciler scenario test runs a control plane, one simulated node that
// pulls from Gitea's container registry with a token, and bends the node
// to the scenario.
func Example() {
	ctx := context.Background()
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Stop()
	// cluster.Kubeconfig is the file for `pinbot ... --kubeconfig`.

	node := kubeletsim.New(cluster.Config(),
		kubeletsim.WithNodeName("node-1"),
		kubeletsim.WithBasicAuth("127.0.0.1:3000", "pinbot", "gitea-token"))
	if err := node.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer node.Stop()

	// Seed 004's readinessMode: fail release: its Pods run but never become ready.
	node.FailReadiness(kubeletsim.UsesImage("sha256:1111111111111111111111111111111111111111111111111111111111111111"))
	// A node that kept an old image of the app.
	if err := node.StaleImage("127.0.0.1:3000/org/app", "sha256:2222222222222222222222222222222222222222222222222222222222222222"); err != nil {
		log.Fatal(err)
	}
	// containerd's bare config-digest imageIDs.
	node.SetImageIDForm(kubeletsim.ConfigDigest)
}
