// Package trust decides whether a digest may move: it checks the image's
// signatures and attestations against a policy before Git changes, and
// says who signed it and how it was built, for the reviewer.
//
// A policy (package trust/policy) is a list of rules by image. An image no rule names is not
// guarded: Check says so ("no signature policy for this image") and lets
// it pass. An image a rule names passes only when
//
//   - a signature over its digest verifies with one of the rule's keys,
//     or with a certificate from the rule's trusted root whose issuer and
//     subject match one of its keyless identities; and
//   - for each attestation the rule requires, an attestation of that
//     predicate type over the digest verifies the same way, and its
//     builder, source repository and ref match the rule's patterns.
//
// # Where signatures are found
//
//   - Sigstore bundles attached as OCI 1.1 referrers, as cosign v3
//     writes them: through the registry's Referrers API, or the referrers
//     tag schema (sha256-<hex>) on registries without that API. Signatures
//     are bundles of cosign's sign predicate; attestations are bundles of
//     their own predicate type.
//   - The legacy cosign signature tag, sha256-<hex>.sig, verified with
//     the rule's keys. A legacy keyless signature is not trusted: its
//     certificate carries no proof pinbot can check offline.
//
// A signature on an index covers the index's children: Check of a child
// digest passes when an index that lists it, named by the caller, passes.
//
// Everything is verified offline, by sigstore-go: keys and the trusted
// root come from files (trusted_root.json, as a private or air-gapped
// Sigstore publishes it); a bundle's transparency log entry is proven by
// its inclusion proof and the log's key in the trusted root, without
// asking Rekor.
package trust
