// Package deploy holds the manifests that run pinbot itself: its namespace,
// service account, RBAC, the reconciler Deployment and its Service, and the
// drift CronJob. Apply them with `kubectl apply -k deploy/` after editing
// config.yaml; the files are embedded so tests can check them and tools can
// print them.
package deploy

import "embed"

// Manifests is the kustomization directory as shipped.
//
//go:embed *.yaml
var Manifests embed.FS
