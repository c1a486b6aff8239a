// Package deployer reads the objects of the deployers pinbot runs next to,
// Argo CD and Flux, and decides which revision counts, without taking
// anything over: pinbot proves what they deployed.
//
// It keeps its own minimal types for the fields pinbot reads, as Kargo
// does, rather than importing argo-cd or Flux modules: an Argo CD
// Application (argoproj.io/v1alpha1), a Flux Kustomization
// (kustomize.toolkit.fluxcd.io/v1) and its GitRepository
// (source.toolkit.fluxcd.io/v1). DecodeApplication, DecodeKustomization and
// DecodeGitRepository read them from JSON, and the *From functions from
// unstructured objects, with errors naming the object and the field.
//
// The decisions are pure functions over those values, tested from
// literals:
//
//   - the Source an app follows: repository URL, path, tracked reference,
//     Helm settings and destination namespace (Application.Source,
//     Kustomization.Source);
//   - the deployed Revision: Argo CD's last successful sync, Flux's
//     status.lastAppliedRevision (Application.Deployed,
//     Kustomization.Deployed), and whether it is the head (AtHead);
//   - whether the deployer's health may be trusted yet (Application.Health,
//     Kustomization.Health): Argo CD's only once no operation runs and
//     status.reconciledAt is not before the operation's finishedAt;
//   - the workloads to verify (Application.Workloads,
//     Kustomization.Workloads);
//   - the per-container verdict while the deployer may be behind the head
//     (Judge, Relate) and whether the app is verified (IsVerified).
//
// Validate checks the `argocd:` or `flux:` block of a verify-only app in
// the reconciler config.
//
// The package is a leaf: it imports nothing else of pinbot and no
// Kubernetes client, so the reconciler wires it into its pass and the
// tests feed it literals.
package deployer
