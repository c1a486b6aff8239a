package config

// ShardKey is what the replicas of serve share the apps out by: where the
// app deploys, "CLUSTER/NAMESPACE" ("" for pinbot's own cluster), so
// that the apps of one namespace fall in one shard and a replica watches
// the Pods of its own apps' namespaces rather than the whole cluster's.
// An app whose config says no namespace (an Argo CD or Flux app named in
// apps:, a discovered one whose object names none) is shared out by its
// name.
func (a *App) ShardKey() string {
	switch {
	case a.Destination != "":
		return a.Destination
	case a.VerifyOnly() || a.Namespace == "":
		return a.Name
	case a.Cluster != nil:
		return a.Cluster.KubeConfig.SecretRef.Name + "/" + a.Namespace
	}
	return "/" + a.Namespace
}
