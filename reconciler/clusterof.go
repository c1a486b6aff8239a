package reconciler

import (
	"context"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// clusterOf is the cluster dest names, which app's deployer applies to:
// pinbot's own (nil), the spoke an Argo CD destination names, or the
// cluster a kubeConfig Secret reaches (see cluster.Remotes).
func (r *Reconciler) clusterOf(ctx context.Context, app *config.App, dest *deployer.Cluster) (*cluster.Cluster, error) {
	if dest == nil {
		return r.local, nil
	}
	if kc := dest.KubeConfig; kc != nil {
		return r.remotes.Flux(ctx, kc)
	}
	if app.ArgoCD == nil {
		return nil, fmt.Errorf("app %s: only an Argo CD destination names another cluster", app.Name)
	}
	appNS, _ := app.ArgoCD.Object()
	return r.remotes.ArgoCD(ctx, appNS, dest)
}

// destinationOf is the cluster of a's shard key (config.App.ShardKey),
// named as the key names it, before any pass has read a's deployer's
// object: nil for pinbot's own (""), an apps: entry's cluster: Secret
// (in stateNS), an Argo CD destination's name or server, a Flux
// kubeConfig Secret.
func destinationOf(a *config.App, name, stateNS string) *deployer.Cluster {
	switch {
	case name == "":
		return nil
	case a.Cluster != nil:
		ref := a.Cluster.KubeConfig.SecretRef
		return &deployer.Cluster{KubeConfig: &deployer.SecretKey{Namespace: stateNS, Name: ref.Name, Key: ref.Key}}
	case a.Flux != nil:
		fluxNS, _ := a.Flux.Object()
		return &deployer.Cluster{KubeConfig: &deployer.SecretKey{Namespace: fluxNS, Name: name}}
	case strings.Contains(name, "://"):
		return &deployer.Cluster{Server: name}
	}
	return &deployer.Cluster{Name: name}
}
