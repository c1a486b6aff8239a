// Package verdict is the reconciler's pure core for one question: do the
// running Pods prove what Git declares? From a Snapshot (the desired
// objects, their live copies, and the Pods, ReplicaSets,
// ControllerRevisions and Nodes of the app's namespaces) Verify computes
// each container's verdict against the digest Git pins, comparing the
// Pods' status imageIDs, and AssessHealth aggregates kstatus results into
// the app's health, like kstatus's status.Compute.
//
// It performs no I/O: registry answers (config digests, index children)
// arrive in Snapshot.Lookups, and Needs says which ones a Snapshot asks
// for. The layering test forbids it client-go's REST, dynamic and typed
// clients, so its purity is checked rather than assumed.
package verdict
