// Package imageref is pinbot's one home for container image references and
// digests. It validates digests ([ValidDigest], [ErrInvalidDigest]), splits a
// reference into repository, tag and digest ([Split], [Parse]), normalises a
// repository to go-containerregistry's form ("nginx" is
// "index.docker.io/library/nginx", a registry host keeps its port) and
// shortens a digest for people to read ([Short]). It also names a platform
// (an OS, architecture and variant: [Platform], [ParsePlatform]), which the
// registry client and the verdict core share.
//
// The grammar is the OCI distribution one: a registry host is DNS labels or
// a bracketed IPv6 address with an optional port, a repository path is
// slash-separated lowercase components joined by ".", "_", "__" or runs of
// "-", a tag is up to 128 word characters, dots and dashes not starting with
// a dot or dash, and a digest is "sha256:" and 64 lowercase hex digits.
//
// The package uses only the standard library, so the pure core (pins) and
// every I/O shell can share it; the module's layering test keeps it so.
package imageref
