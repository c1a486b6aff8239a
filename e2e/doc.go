// Package e2e proves apps against the real producers of what pinbot reads:
// Flux's source-controller and kustomize-controller (`make flux`), Argo
// CD's application-controller, repo-server and API server (`make argocd`),
// and the kubelet (`make kubelet`, kubemark's hollow node with pinbot's
// image service), built from their modules and run on loopback against the
// test control plane, with the manifests and images in a real Gitea.
//
// The reconciler's own scenario tests play the deployers and the node:
// they write the Kustomization's and Application's status the way their
// authors believe the controllers do, and the kubelet simulator writes Pod
// status. These tests run the real programs, so a field the real producer
// fills differently (a revision format, a condition's reason, an inventory
// entry, a status that lags the apply, an imageID form) fails here. In the
// Flux and Argo CD tests pinbot applies nothing: it only reads and proves.
// In the kubelet tests pinbot is the deployer.
//
// The package has no code outside its tests.
package e2e
