// Package reconciler makes a cluster follow Git and proves it: for each app
// in its config it fetches a branch, renders the manifests at a path (plain
// YAML or kustomize), checks them against the app's namespace allow-list,
// applies them with server-side apply, computes health with kstatus and
// verifies that every container of each workload's current revision runs the
// image digest Git pins, comparing the Pods' status imageIDs.
//
// The decisions are pure functions over values, tested from literals:
// render.Dir and Place decide what would be applied, AssessHealth
// aggregates kstatus results, and Verify turns a Snapshot of Pods, ReplicaSets,
// ControllerRevisions and Nodes into per-container verdicts, like kstatus's
// status.Compute. Verify, AssessHealth and Snapshot live in the leaf
// package reconciler/verdict, which the layering test keeps free of API
// clients; the names here are aliases. The Reconciler wraps them with I/O: a cached go-git clone
// (Source), a dynamic client and REST mapper (Applier), informer caches
// (Watcher), the registry for config-digest and index-child lookups
// (Registry), a ConfigMap per app holding its status and last syncs
// (History), and Gitea commit statuses and pull-request comments (Forge).
//
// Policy defaults are the safe ones: detection only (a person runs
// `pinbot sync`), no self-heal, no prune, an empty render refused. In
// this package drift means a field of a live object that differs from
// Git (promote's drift is a tag that moved off its pinned digest). Drift
// is what a server-side apply dry run of Git's manifest would change on
// the fields that manifest sets (DriftOf), never a field Git does not
// set; live state comes from watches of each app's inventory, and an
// object unchanged on both sides since its last diff is not dry-run
// again. Self-heal re-applies Git's version of drifted objects, stops at
// a drift war, and never touches fields under an ignore rule. Nothing is
// applied, healed or pruned on a commit that was not just fetched from a
// reachable source. Errors
// are sorted at the loop: Git unreachable (*SourceError) and Kubernetes API
// hiccups are retried with backoff, and nothing is applied meanwhile;
// problems in Git (*render.Error, *GuardError, *ApplyError) are recorded,
// reported on the commit, and retried only at the next interval.
//
// A sync applies in waves (PlanWaves: ascending pinbot.dev/sync-wave, or
// Argo CD's annotation; Namespaces and CRDs head the first wave; Helm's and
// Argo CD's pre-sync hooks come before every other wave and post-sync
// hooks after, each hook run once per rendered content, see HookOf and
// hookAction) and waits for each wave but the last to be ready, a Job
// until it has completed; a
// failed or timed-out wave stops the sync with a *WaveError naming the
// object. With prune on, a sync then deletes the app's orphans as PlanPrune
// decides (foreground, so what they own goes first); objects annotated
// pinbot.dev/prune: "false" (or Argo CD's Prune=false), Namespaces, CRDs and objects outside the
// allow-lists are kept, and an empty render deletes nothing unless
// allowEmpty.
//
// Everything pinbot applies carries the inventory label LabelApp naming the
// app, and the annotation AnnotationHash holding a hash of the rendered
// object, so a later pass can tell what Git moved (OutOfSync) and which
// objects an app owns (for prune) without a per-object dry run.
package reconciler
