package verdict

import "pinbot.dev/pinbot/internal/imageref"

// LookupKind says which registry answer a comparison needs.
type LookupKind string

// Lookup kinds.
const (
	// LookupChild: the child of the pinned index for a platform, to accept
	// a runtime that reports the platform manifest of a pinned index.
	LookupChild LookupKind = "child"
	// LookupConfig: the config digest of the pinned image for a platform,
	// to accept a runtime that reports a bare "sha256:<config>".
	LookupConfig LookupKind = "config digest"
)

// Lookup is one registry question verification depends on. Answers never
// change for a given Lookup (the Ref is by digest), so they cache forever.
type Lookup struct {
	Kind     LookupKind
	Ref      string // repo@sha256:... as pinned in Git
	Platform imageref.Platform
}

// Answer is the registry's reply to a Lookup.
type Answer struct {
	// Digest is the child or config digest; "" when the pinned image is
	// not an index or the index has no child for the platform.
	Digest string
	// Err, when set, says the registry could not answer; the verdict is
	// then Unknown.
	Err string
}

// Lookups holds answers by question.
type Lookups map[Lookup]Answer
