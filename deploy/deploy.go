// Package deploy holds the manifests that run pinbot itself: its namespace,
// service account and RBAC, and `pinbot serve` as a Deployment of two
// replicas that elect a leader, with its Service for webhooks, the
// dashboard and metrics. Apply them with `kubectl apply -k deploy/` after
// editing config.yaml; rbac-deployers.yaml is an optional extra grant for
// verify-only apps. The files are embedded so tests can check them and
// tools can print them.
package deploy

import "embed"

// Manifests is the kustomization directory as shipped.
//
//go:embed *.yaml
var Manifests embed.FS
