// Package reconciler makes a cluster follow Git and proves it: for each app
// of its config it fetches a branch, renders the manifests at a path (plain
// YAML, kustomize or a Helm chart), places them within the app's
// allow-lists, applies them with server-side apply in waves, computes
// health with kstatus and verifies that every container of each
// workload's current revision runs the image digest Git pins, comparing
// the Pods' status imageIDs.
//
// The package is orchestration. Each decision lives in a subpackage named
// by what it decides, a pure function over values tested from literals:
// guard.Place (where objects go, what an app may write), wave.Plan and
// hook.Of (the order of a sync), prune.Plan (what happens to orphans),
// diff.Fields and diff.Compare (what drifted, what is out of sync), ignore
// (fields left to others), heal.Guard (drift wars), verdict.Verify and
// verdict.AssessHealth (the proof and health), settle (what a
// verification means for the record and the commit status) and status.Of
// (the app's status). The I/O shells around them are each cluster's
// clients and watch caches (reconciler/cluster: the Applier of
// reconciler/ssa, Pods, inventories, spokes), the record per app
// (reconciler/history), the fetched branches (reconciler/gitsource), the
// registry for config-digest and index-child lookups, and Gitea commit
// statuses and pull-request comments.
//
// One pass of one app is one value (pass): the app and its state, what
// the pass may do (its mode and options), the record transaction, and
// what it read and found. Passes of one app take turns. Apps that Argo CD
// or Flux deploys are passed by the observer, which only reads their
// deployer's objects and proves what runs.
//
// Policy defaults are the safe ones: detection only (a person runs
// `pinbot sync`), no self-heal, no prune, an empty render refused. In this
// package drift means a field of a live object that differs from Git
// (promote's drift is a tag that moved off its pinned digest). Nothing is
// applied, healed or pruned on a commit that was not just fetched from a
// reachable source. Errors are sorted at the loop: Git unreachable
// (*gitsource.Error) and Kubernetes API hiccups are retried with backoff,
// and nothing is applied meanwhile; problems in Git (*render.Error,
// *guard.Error, *ssa.ApplyError, *wave.Error) are recorded, reported on
// the commit, and retried only at the next interval.
//
// Everything pinbot applies carries the inventory label object.LabelApp
// naming the app, and the annotation object.AnnotationHash holding a hash
// of the rendered object, so a later pass can tell what Git moved
// (OutOfSync) and which objects an app owns (for prune) without a
// per-object dry run.
package reconciler
