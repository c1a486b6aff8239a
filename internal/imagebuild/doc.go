// Package imagebuild builds pinbot's own container image without Docker, the
// way ko does, on go-containerregistry: a static pinbot binary per platform
// on an empty base, one OCI image per platform, and an OCI index over them.
//
// Every image holds two layers. The first is the same on every platform:
// the build machine's CA bundle at /etc/ssl/certs/ca-certificates.crt, and
// /etc/passwd and /etc/group entries for root and for the non-root user
// 65532 ("nonroot") the image runs as, with its home directory and a /tmp.
// The second holds the binary at [BinaryPath], the image's entrypoint.
//
// The layers are reproducible: entries are sorted, every modification time
// is the [Options] Created time (from SOURCE_DATE_EPOCH), owners are numeric
// and fixed, and nothing of the build machine but the files' contents gets
// in. The same binaries, CA bundle, labels and time give the same index
// digest, and Go builds the same binary from the same source with -trimpath.
//
// The package is build tooling: hack/image and its tests use it, and the
// layering test keeps it out of the pinbot binary.
package imagebuild
