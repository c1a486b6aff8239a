package verdict

import "pinbot.dev/pinbot/internal/imageref"

// LookupKind says which registry answer a comparison needs.
type LookupKind string

// Lookup kinds.
const (
	// LookupChildren: the children of an index a node of the platform could
	// run. Asked of the pinned digest (the runtime reports a platform
	// child of a pinned index) and of the running one (the runtime reports
	// the index of a pinned platform child).
	LookupChildren LookupKind = "children"
	// LookupConfigs: the config digests of the pinned image for a
	// platform, to judge a runtime that reports a bare "sha256:<config>".
	LookupConfigs LookupKind = "config digests"
)

// Lookup is one registry question verification depends on. Answers never
// change for a given Lookup (the Ref is by digest), so they cache forever.
type Lookup struct {
	Kind     LookupKind
	Ref      string // repo@sha256:..., the repository as pinned in Git
	Platform imageref.Platform
}

// Answer is the registry's reply to a Lookup.
type Answer struct {
	// Index is true when Ref names an image index.
	Index bool `json:"index,omitempty"`
	// Digests are, for LookupChildren, the index's children the platform
	// could run (none for a single manifest); for LookupConfigs, the
	// config digests of those children, or of the single manifest.
	Digests []string `json:"digests,omitempty"`
	// Missing is true when the registry answered that Ref does not exist:
	// a definite answer (it is not the pinned image's relative), unlike Err.
	Missing bool `json:"missing,omitempty"`
	// Err, when set, says the registry could not answer; a verdict that
	// needs the answer is then Inconclusive.
	Err string `json:"err,omitempty"`
}

// Lookups holds answers by question.
type Lookups map[Lookup]Answer
