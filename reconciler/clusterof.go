package reconciler

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployed"
)

// clusterOf is the cluster d's deployer applies to: pinbot's own, the
// spoke an Argo CD destination names, or the cluster a Flux
// Kustomization's kubeConfig Secret reaches (see cluster.Remotes).
func (r *Reconciler) clusterOf(ctx context.Context, app *config.App, d *deployed.App) (*cluster.Cluster, error) {
	dest := d.Source.Cluster
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
