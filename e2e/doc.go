// Package e2e proves apps that the real deployers deploy: Flux's
// source-controller and kustomize-controller (`make flux`), built from
// their modules and run on loopback against the test control plane, with
// the manifests in a real Gitea.
//
// The reconciler's own scenario tests play the deployers: they write the
// Kustomization's status the way its authors believe kustomize-controller
// does. These tests run the controllers themselves, so a field the real
// controller fills differently (a revision format, a condition's reason,
// an inventory entry, a status that lags the apply) fails here. pinbot
// applies nothing in them: it only reads and proves.
//
// The package has no code outside its tests.
package e2e
