// Package deploy holds the manifests that run pinbot itself, as a
// kustomize base, optional components and an example overlay:
//
//   - base: the namespace pinbot-system, the ServiceAccount and RBAC, and
//     `pinbot serve` as a Deployment of two replicas that elect a leader,
//     with its Service and PodDisruptionBudget. It writes nothing outside
//     pinbot-system and is what an upgrade changes.
//   - components/deployers and components/argocd-clusters: the optional
//     read grants for verify-only apps and for other clusters.
//   - overlays/example: what a user owns, their config, their app
//     namespaces' RoleBindings and their image; `kubectl apply -k
//     deploy/overlays/example`.
//
// The files are embedded so tests can check them and tools can print them.
package deploy

import "embed"

// Manifests is the directory as shipped.
//
//go:embed base/*.yaml components/*/*.yaml overlays/*/*.yaml
var Manifests embed.FS
